"""``python -m tools.cli.install_command`` from a checkout: the ``kernelwheel.cli.install_command`` command."""

from kernelwheel.cli.install_command import main

if __name__ == "__main__":
    raise SystemExit(main())
