"""``python -m tools.hub2wheel`` from a checkout: the ``hub2wheel`` command (``kernelwheel.cli.hub2wheel``)."""

from kernelwheel.cli.hub2wheel import main

if __name__ == "__main__":
    raise SystemExit(main())
