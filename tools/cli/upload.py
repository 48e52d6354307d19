"""``python -m tools.cli.upload`` from a checkout: the ``kernelwheel.cli.upload`` command."""

from kernelwheel.cli.upload import main

if __name__ == "__main__":
    raise SystemExit(main())
