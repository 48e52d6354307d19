"""PEP 517 backend: scikit-build-core, then the wheel is renamed for the backend and torch it was built with.

PEP 621 forbids a dynamic ``name``, so pyproject.toml cannot say ``img2gray-cu130`` on a CUDA 13.0 toolchain
and ``img2gray-cu128`` on a 12.8 one. CMake records what it actually compiled with in
``img2gray/_build_info.json``; this wrapper reads that file from the finished wheel and rewrites the wheel
through ``tools.wheelname`` / ``tools.wheelfile``:

* distribution ``img2gray-<backend>`` (``cu130``, ``cu128``, ``cpu``), import name unchanged;
* version ``<build.toml version>+torch<X.Y>`` and ``Requires-Dist: torch==X.Y.*`` for the classic ABI
  (``torch>=X.Y`` and no label for a stable-ABI build);
* tags as scikit-build-core wrote them (``cp39-abi3-linux_x86_64``); ``auditwheel repair`` sets the platform.

``prepare_metadata_for_build_wheel`` is deliberately not provided: the name is only known after compiling,
so frontends take the metadata from the built wheel.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Optional

from scikit_build_core import build as _skbuild

from tools.errors import InvalidWheel
from tools.wheelfile import WheelContents, build_metadata, read_wheel, rename_wheel, write_wheel
from tools.wheelname import WheelName, distribution_name, kernel_version, torch_minor, torch_requirement

ConfigSettings = Optional[dict[str, Any]]

get_requires_for_build_wheel = _skbuild.get_requires_for_build_wheel
get_requires_for_build_sdist = _skbuild.get_requires_for_build_sdist
build_sdist = _skbuild.build_sdist


def build_wheel(
    wheel_directory: str, config_settings: ConfigSettings = None, metadata_directory: Optional[str] = None
) -> str:
    with tempfile.TemporaryDirectory(prefix="img2gray-skbuild-") as staging:
        built = _skbuild.build_wheel(staging, config_settings)
        final = retag_built_wheel(read_wheel(Path(staging) / built))
        return write_wheel(final, Path(wheel_directory)).name


def retag_built_wheel(contents: WheelContents) -> WheelContents:
    """Name, version and torch pin of a wheel from the facts in its ``<package>/_build_info.json``."""
    info_files = [p for p in contents.files if p.endswith("/_build_info.json") and p.count("/") == 1]
    if len(info_files) != 1:
        raise InvalidWheel(f"{contents.name.filename}: expected one <package>/_build_info.json, found {info_files}")
    info = json.loads(contents.files[info_files[0]])
    stable = info["abi"] == "stable"
    torch = torch_minor(info["requires_torch"])  # the building minor (classic) or the stable-ABI target
    name = WheelName(
        distribution=distribution_name(info["kernel"], info["backend"]),
        version=kernel_version(info["version"], None if stable else torch),
        python_tag=contents.name.python_tag,
        abi_tag=contents.name.abi_tag,
        platform_tag=contents.name.platform_tag,
    )
    renamed = rename_wheel(contents, name)
    renamed.metadata = build_metadata(
        name, requires_dist=[torch_requirement(torch, stable_abi=stable)], base=renamed.metadata
    )
    return renamed
