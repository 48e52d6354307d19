"""The errors of img2gray's own build (``tools/build``): ``build.toml`` that does not describe a build, and a build
step that failed. Both are ``kernelwheel``'s ``ToolError``, so the checkout's commands print them as one
``error: ...`` line like every toolkit error, while the toolkit itself knows nothing of img2gray's build."""

from __future__ import annotations

from kernelwheel.io.errors import ToolError


class InvalidManifest(ToolError, ValueError):
    """``build.toml`` is missing a field or has one of the wrong type."""


class BuildFailed(ToolError):
    """A build step failed (the compiler, pip wheel, auditwheel, git) or was given a value it cannot use."""
