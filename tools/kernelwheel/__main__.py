"""``python -m kernelwheel <command>``: the ``kernelwheel`` command (``kernelwheel.cli.dispatch``)."""

from kernelwheel.cli.dispatch import main

if __name__ == "__main__":
    raise SystemExit(main())
