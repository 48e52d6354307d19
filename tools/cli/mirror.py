"""``python -m tools.cli.mirror`` from a checkout: the ``kernelwheel.cli.mirror`` command."""

from kernelwheel.cli.mirror import main

if __name__ == "__main__":
    raise SystemExit(main())
