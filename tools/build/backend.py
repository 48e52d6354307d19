"""PEP 517 backend: scikit-build-core, then the wheel is renamed for the backend and torch it was built with.

PEP 621 forbids a dynamic ``name``, so pyproject.toml cannot say ``img2gray-cu130`` on a CUDA 13.0 toolchain
and ``img2gray-cu128`` on a 12.8 one. CMake records what it actually compiled with in
``img2gray/_build_info.json``; this wrapper reads that file from the finished wheel and rewrites the wheel
through ``kernelwheel.wheels.naming`` / ``kernelwheel.wheels.wheel_reader`` and ``wheel_writer``:

* distribution ``img2gray-<backend>`` (``cu130``, ``cu128``, ``cpu``), import name unchanged;
* version ``<build.toml version>+torch<X.Y>`` and ``Requires-Dist: torch==X.Y.*`` for the classic ABI
  (``torch>=X.Y`` and no label for a stable-ABI build);
* tags as scikit-build-core wrote them (``cp39-abi3-linux_x86_64``); ``auditwheel repair`` sets the platform;
* the GPU code its binaries hold (``kernelwheel.wheels.gpu_targets``), recorded as hub2wheel records it:
  ``.dist-info/gpu_targets.json`` and, when there is some, one line at the end of the description.

``prepare_metadata_for_build_wheel`` is deliberately not provided: the name is only known after compiling,
so frontends take the metadata from the built wheel.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Optional

from packaging.version import Version
from scikit_build_core import build as _skbuild

from kernelwheel.format.variant_pieces import Arch, Backend, Torch, TorchStableAbi
from kernelwheel.format.variants import Variant
from kernelwheel.io.errors import InvalidWheel
from kernelwheel.wheels.gpu_targets import FILE_NAME, description_line, wheel_files_targets
from kernelwheel.wheels.naming import framework_requirement_for, torch_minor, wheel_name_for
from kernelwheel.wheels.wheel_contents import WheelContents
from kernelwheel.wheels.wheel_reader import read_wheel
from kernelwheel.wheels.wheel_writer import build_metadata, rename_wheel, write_wheel

ConfigSettings = Optional[dict[str, Any]]

get_requires_for_build_wheel = _skbuild.get_requires_for_build_wheel
get_requires_for_build_sdist = _skbuild.get_requires_for_build_sdist
build_sdist = _skbuild.build_sdist


def build_wheel(
    wheel_directory: str, config_settings: ConfigSettings = None, metadata_directory: str | None = None
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
    built = contents.name
    backend = built_backend(info["backend"], where=f"{contents.name.filename}: {info_files[0]}")
    torch = torch_minor(info["requires_torch"])  # the building minor (classic) or the stable-ABI target
    cpu = built.platform_tag.split("_", 1)[1]  # linux_x86_64 → x86_64, as scikit-build-core tagged it
    # The same variant name tools.cli.build_variants gives this build; naming turns it into the wheel name.
    variant = Variant(TorchStableAbi(torch) if info["abi"] == "stable" else Torch(torch, "cxx11"),
                      Arch(backend, cpu, "linux"))
    name = wheel_name_for(variant, info["kernel"], Version(info["version"]), python_tag=built.python_tag,
                          abi_tag=built.abi_tag, platform_tag=built.platform_tag)
    renamed = rename_wheel(contents, name)
    renamed.metadata = build_metadata(name, requires_dist=[framework_requirement_for(variant)], base=renamed.metadata)
    gpu = wheel_files_targets(renamed.files, name.filename)
    renamed.files[f"{name.dist_info}/{FILE_NAME}"] = gpu.json_bytes()
    if gpu:
        description = str(renamed.metadata.get("description") or "").rstrip("\n")
        renamed.metadata["description"] = f"{description}\n\n{description_line(gpu)}\n"
    return renamed


def built_backend(record: Any, *, where: str) -> Backend:
    """The backend from ``_build_info.json``'s ``{"type": "cuda", "version": "13.0", "tag": "cu130"}`` record
    (cmake/build_info.cmake): its ``tag``, parsed once, which must agree with the type and version beside it."""
    if not isinstance(record, dict) or not {"type", "version", "tag"} <= record.keys():
        raise InvalidWheel(f"{where}: \"backend\" must be an object with type, version and tag; got {record!r}")
    backend = Backend.parse(record["tag"])
    version = None if backend.version is None else str(backend.version)
    if (backend.kind, version) != (record["type"], record["version"]):
        raise InvalidWheel(f"{where}: backend tag {record['tag']!r} is {backend.kind} {version}, but the record "
                           f"says {record['type']} {record['version']}")
    return backend
