"""The keys of ``metadata.json`` that changed meaning in kernels 0.19: ``build-layout`` and ``backend.type``.

``layout.read_metadata`` reads the file and type-checks every field; this module says what two of them mean, the
way kernels 0.19.1's ``Metadata`` (``kernels._rust``) decides:

* ``build-layout``: absent or ``"files"`` (the package's files lie in the variant folder), or ``"zip"`` (the
  package is inside ``<id>.zip``, extension modules beside it). Any other value, including another spelling
  (``"ZIP"``) or ``null``, is refused: 0.19.1's parser refuses it too.
* ``backend.type``: a known backend, ``"agnostic"`` (a build for no particular backend: no type, no arch check), or
  a type this toolkit does not know (0.19.1 parses it and refuses only when asked for the type; 0.17.2 refused the
  whole file). Such a type is kept as given: nothing here decides from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from kernelwheel.io.errors import InvalidVariant

BuildLayout = Literal["files", "zip"]
BUILD_LAYOUTS: tuple[BuildLayout, ...] = ("files", "zip")
KNOWN_BACKENDS = ("cann", "cpu", "cuda", "metal", "neuron", "rocm", "tpu", "xpu")
AGNOSTIC = "agnostic"


def build_layout(metadata: Mapping[str, object], where: str) -> BuildLayout:
    """``metadata.json``'s ``build-layout``: ``"files"`` when absent (metadata written before the key existed)."""
    value = metadata.get("build-layout", "files")
    for layout in BUILD_LAYOUTS:
        if value == layout:
            return layout
    raise InvalidVariant(f"{where}/metadata.json: 'build-layout' must be 'files' or 'zip', got "
                         f"{type(value).__name__} {value!r:.60}")


def backend_type(metadata: Mapping[str, object]) -> str | None:
    """``backend.type`` as kernels 0.19.1 reads it: None for an agnostic build (or none given), else the type, known
    or not (``is_known_backend`` tells which)."""
    backend = metadata.get("backend")
    kind = backend.get("type") if isinstance(backend, dict) else None
    return kind if isinstance(kind, str) and kind != AGNOSTIC else None


def is_known_backend(kind: str | None) -> bool:
    """Whether ``kind`` (``backend_type``) is a backend kernels 0.19.1 names; an unknown one came from a newer
    kernel-builder."""
    return kind in KNOWN_BACKENDS


def zip_archive_name(metadata: Mapping[str, object], where: str) -> str:
    """``<id>.zip``: where a zip layout's package is (kernels 0.19.1's ``_zip_spec``). The id must be a module name:
    it is also the name the build is imported under."""
    build_id = metadata.get("id")
    if not isinstance(build_id, str) or not build_id.isidentifier():
        raise InvalidVariant(f"{where}/metadata.json: a 'zip' build layout needs 'id' to be a module name (the "
                             f"archive is <id>.zip), got {build_id!r:.60}")
    return f"{build_id}.zip"
