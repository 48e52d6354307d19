"""``python -m tools.cli.publish`` from a checkout: the ``kernelwheel.cli.publish`` command."""

from kernelwheel.cli.publish import main

if __name__ == "__main__":
    raise SystemExit(main())
