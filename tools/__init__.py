"""img2gray's build (``tools.build``) and commands run from a checkout as ``python -m tools.<name>``; the generic
toolkit they use is the ``kernelwheel`` distribution beside them (kernelwheel/, pyproject.toml)."""
