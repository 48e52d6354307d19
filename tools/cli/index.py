"""``python -m tools.cli.index`` from a checkout: the ``kernelwheel.cli.index`` command."""

from kernelwheel.cli.index import main

if __name__ == "__main__":
    raise SystemExit(main())
