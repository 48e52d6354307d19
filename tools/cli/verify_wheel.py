"""``python -m tools.cli.verify_wheel`` from a checkout: the ``kernelwheel.cli.verify_wheel`` command."""

from kernelwheel.cli.verify_wheel import main

if __name__ == "__main__":
    raise SystemExit(main())
