"""``python -m tools.cli.hub2wheel`` from a checkout: the ``kernelwheel.cli.hub2wheel`` command."""

from kernelwheel.cli.hub2wheel import main

if __name__ == "__main__":
    raise SystemExit(main())
