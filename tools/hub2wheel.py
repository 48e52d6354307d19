"""``python -m tools.hub2wheel``: the documented spelling of the ``tools.cli.hub2wheel`` command."""

from tools.cli.hub2wheel import main

if __name__ == "__main__":
    raise SystemExit(main())
