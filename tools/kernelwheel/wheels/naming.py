"""Wheel naming and tagging: the one place that spells distribution names, versions, requirements and tags.

The build backend (``tools.build.backend``), hub2wheel (``convert``) and the index all go through here, so
``img2gray-cu130`` / ``0.1.0+torch2.14`` / ``torch==2.14.*`` / ``cp39-abi3`` are decided once. A build variant becomes
a wheel name in exactly one function, ``wheel_name_for``; its framework requirement in ``framework_requirement_for``.
What differs per framework (the project suffix, the version label, the requirement) is that framework's rules, its
class in ``format/frameworks``: here those rules are asked, never the framework's type.

Scheme (docs/building.md, "Naming scheme"):

* distribution: ``<kernel>-<backend>`` (``img2gray-cu130``, ``img2gray-rocm71``, ``img2gray-cpu``); a noarch
  kernel keeps the bare kernel name; an SDK is ``<kernel>-sdk[-<backend>]``, an MLX kernel ``<kernel>-mlx-<backend>``.
* version: ``<kernel version>+torch<X.Y>`` for builds tied to one torch minor. The local label keeps the dot
  so that ``torch2.10`` sorts above ``torch2.9`` (PEP 440 compares dot-separated local segments as numbers).
  Stable-ABI builds carry no label.
* ``Requires-Dist``: ``torch==X.Y.*`` for a build tied to one minor, ``torch>=X.Y`` for a stable-ABI build.

Lengths: a wheel filename must fit the file system's 255-byte name limit together with what is made from it (the
index's ``<wheel>.metadata``, the ``.<name>.<pid>.<random>.part`` temporaries of ``atomic``), so a long kernel name
or version is refused here, before anything is written, instead of failing with ENAMETOOLONG in the middle.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.requirements import Requirement
from packaging.tags import Tag
from packaging.utils import (
    InvalidWheelFilename,
    canonicalize_name,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from kernelwheel.format.frameworks import Torch, TorchStableAbi, dotted_str
from kernelwheel.format.variant_pieces import Backend
from kernelwheel.format.variants import Variant
from kernelwheel.io.atomic import NAME_MAX, TEMPORARY_NAME_OVERHEAD
from kernelwheel.io.errors import InvalidVariantName, InvalidWheelName

# PEP 508 distribution names, ASCII only: packaging's own check (canonicalize_name(validate=True)) uses IGNORECASE
# without re.ASCII, so it also takes the Kelvin sign, which no PEP 503 page or installer knows.
_DISTRIBUTION_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
_CUDA_VERSION = re.compile(r"^(\d+)\.(\d+)")
# Lowest glibc any manylinux tag names (PEP 600; manylinux2014 == manylinux_2_17).
_MIN_MANYLINUX_GLIBC = (2, 17)
# ".metadata": the PEP 658 file the index writes beside each wheel.
MAX_WHEEL_FILENAME_BYTES = NAME_MAX - len(".metadata") - TEMPORARY_NAME_OVERHEAD


def parse_version(value: object, what: str) -> Version:
    """``value`` (a string or integer) as a PEP 440 version; ``InvalidWheelName`` naming ``what`` otherwise."""
    if isinstance(value, Version):
        return value
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InvalidWheelName(f"{what} {value!r:.60} is not a PEP 440 version (expected e.g. '0.1.0')")
    try:
        return Version(str(value))
    except (InvalidVersion, ValueError):  # ValueError: int() past sys.get_int_max_str_digits on a huge number
        raise InvalidWheelName(f"{what} {str(value)[:60]!r} is not a PEP 440 version (expected e.g. '0.1.0')") from None


def is_distribution_name(name: str) -> bool:
    """Whether ``name`` is a PEP 508 distribution name (ASCII letters, digits, '.', '_', '-'; starting and ending
    with a letter or digit)."""
    return _DISTRIBUTION_NAME.fullmatch(name) is not None  # fullmatch: '$' would admit a final newline


def validate_kernel_name(kernel: str) -> str:
    """Return ``kernel`` if it can be a distribution name (PEP 508 name rules), else raise."""
    if not is_distribution_name(kernel):
        raise InvalidWheelName(
            f"kernel name {kernel!r} is not a valid distribution name: expected letters, digits, '.', '_' or "
            "'-', starting and ending with a letter or digit"
        )
    return kernel


def distribution_name(kernel: str, backend_tag: str | None) -> str:
    """``img2gray`` + ``cu130`` → ``img2gray-cu130``; ``None`` (noarch) → ``img2gray``."""
    validate_kernel_name(kernel)
    if backend_tag is None:
        return kernel
    try:
        backend = Backend.parse(backend_tag)  # the one parser of backend tags (variant_pieces.Backend)
    except InvalidVariantName as exc:
        raise InvalidWheelName(f"backend tag {backend_tag!r}: {exc}") from None
    if backend.tag != backend_tag:
        raise InvalidWheelName(f"backend tag {backend_tag!r} is not canonical (expected {backend.tag!r})")
    return f"{kernel}-{backend_tag}"


def cuda_backend_tag(cuda_version: str) -> str:
    """``"13.0"`` (``torch.version.cuda``, ``nvcc --version``) → ``"cu130"``; ``"12.8.93"`` → ``"cu128"``."""
    match = _CUDA_VERSION.match(cuda_version.strip())
    if not match:
        raise InvalidWheelName(f"CUDA version {cuda_version!r} is not of the form MAJOR.MINOR (e.g. '13.0')")
    major, minor = match.groups()
    return Backend("cuda", Version(f"{int(major)}.{int(minor)}")).tag


def torch_minor(torch_version: str | Version) -> Version:
    """``"2.14.1+cu130"`` → ``Version("2.14")``: the part of torch's version that its C++ ABI is tied to."""
    version = parse_version(torch_version, "torch version")
    return Version(f"{version.major}.{version.minor}")


def torch_label(torch: Version) -> str:
    """``Version("2.14")`` → ``"torch2.14"``: the local version label, and the folder of that torch's sub-index."""
    return f"torch{dotted_str(torch)}"


def labelled_torch(version: Version) -> Version | None:
    """The inverse of ``kernel_version``: ``0.1.0+torch2.14`` → ``Version("2.14")``; None without such a label."""
    local = version.local or ""
    if not local.startswith("torch"):
        return None
    try:
        return torch_minor(local[len("torch") :])
    except InvalidWheelName:
        return None


def kernel_version(base: str | Version, torch: Version | None) -> Version:
    """The wheel version: ``0.1.0`` + torch 2.14 → ``0.1.0+torch2.14``; ``torch=None`` (stable ABI) → ``0.1.0``."""
    version = parse_version(base, "kernel version")
    if version.local is not None:
        raise InvalidWheelName(
            f"kernel version {base!r} already has a local label; expected a public version such as "
            f"{version.public!r}, the torch label is added here"
        )
    if torch is None:
        return version
    return Version(f"{version.public}+{torch_label(torch)}")


def _labelled(version: Version, label: str) -> Version:
    return Version(f"{version.public}+{label}")


def torch_requirement(torch: Version, *, stable_abi: bool = False) -> Requirement:
    """``torch==2.14.*`` for a build tied to torch 2.14; ``torch>=2.10`` for a stable-ABI build targeting 2.10 (as
    those frameworks' rules spell it)."""
    return TorchStableAbi(torch).requirement() if stable_abi else Torch(torch).requirement()


def manylinux_tag(glibc: tuple[int, int], arch: str) -> str:
    """The PEP 600 tag for a binary whose newest glibc symbol is ``glibc``: ``(2, 28)`` → ``manylinux_2_28_x86_64``."""
    major, minor = max(glibc, _MIN_MANYLINUX_GLIBC)
    return f"manylinux_{major}_{minor}_{arch}"


@dataclass(frozen=True)
class WheelName:
    """The parts of a wheel's filename; the same ``version`` object goes into METADATA."""

    distribution: str
    version: Version
    python_tag: str
    abi_tag: str
    platform_tag: str

    @property
    def project(self) -> str:
        """The distribution name as it appears in filenames and dist-info folders (PEP 427 escaping)."""
        return canonicalize_name(self.distribution).replace("-", "_")

    @property
    def tag(self) -> str:
        return f"{self.python_tag}-{self.abi_tag}-{self.platform_tag}"

    @property
    def tags(self) -> frozenset[Tag]:
        return frozenset(
            Tag(py, abi, plat)
            for py in self.python_tag.split(".")
            for abi in self.abi_tag.split(".")
            for plat in self.platform_tag.split(".")
        )

    @property
    def dist_info(self) -> str:
        return f"{self.project}-{self.version}.dist-info"

    @property
    def filename(self) -> str:
        name = f"{self.project}-{self.version}-{self.tag}.whl"
        size = len(name.encode("utf-8"))
        if size > MAX_WHEEL_FILENAME_BYTES:
            raise InvalidWheelName(
                f"wheel filename {name[:48] + '...' + name[-24:]!r} is {size} bytes, over the "
                f"{MAX_WHEEL_FILENAME_BYTES} that fit (the {NAME_MAX}-byte file-name limit, less room for the "
                f".metadata file and temporary names): shorten the kernel name (--dist-name) or the version "
                f"(--kernel-version)"
            )
        # Round-trip through packaging so that a name we write is always one pip accepts.
        try:
            parse_wheel_filename(name)
        except InvalidWheelFilename as exc:
            raise InvalidWheelName(f"{name!r} is not a valid wheel filename: {exc}") from None
        return name

    @classmethod
    def parse(cls, filename: str) -> WheelName:
        """Read a wheel filename (via ``packaging.utils.parse_wheel_filename``)."""
        try:
            name, version, _build, tags = parse_wheel_filename(filename)
        except InvalidWheelFilename as exc:
            raise InvalidWheelName(f"{filename!r}: {exc}") from None
        # Compressed tag sets (py2.py3-none-any) are kept as written, in the filename's order.
        python_tag, abi_tag, platform_tag = filename[: -len(".whl")].split("-")[-3:]
        if tags != cls(name, version, python_tag, abi_tag, platform_tag).tags:
            raise InvalidWheelName(f"{filename!r}: could not read its tags back")
        return cls(str(name), version, python_tag, abi_tag, platform_tag)


def framework_requirement_for(variant: Variant) -> Requirement:
    """What the variant's framework needs at run time (``frameworks``: ``FrameworkRules.requirement``):
    ``torch==X.Y.*`` for ``torchXY``, ``torch>=X.Y`` for ``torch-stable-abiXY``, ``apache-tvm-ffi==X.Y.*`` for
    ``tvm-ffiXY`` (kernels loads it only with tvm-ffi X.Y), bare ``torch`` for noarch."""
    requirement = variant.framework.requirement()
    if requirement is None:
        raise InvalidVariantName(f"variant {variant}: an SDK has no framework to require")
    return requirement


def framework_requirements(variant: Variant) -> list[Requirement]:
    """``framework_requirement_for`` as a list: empty for an SDK, which runs without any framework."""
    requirement = variant.framework.requirement()
    return [] if requirement is None else [requirement]


def wheel_name_for(
    variant: Variant, kernel: str, base_version: Version, *, python_tag: str, abi_tag: str, platform_tag: str,
    noarch_backend: str | None = None,
) -> WheelName:
    """The wheel a build variant becomes: ``img2gray`` + ``torch214-cxx11-cu130-x86_64-linux`` + ``0.1.0`` →
    ``img2gray-cu130 0.1.0+torch2.14``; a stable-ABI or noarch variant carries no torch label. A tvm-ffi variant is
    another project, ``<kernel>-tvm-ffi-<backend>`` (it needs no torch, and must never be chosen for a torch user),
    labelled ``+tvmffiX.Y`` as a torch build is labelled ``+torchX.Y``. ``noarch_backend`` names a noarch build's
    project ``<kernel>-<backend>`` (when a kernel's noarch builds differ per backend, see ``noarch``). SDK and MLX
    variants are projects of their own (``own_project``). A name in kernels 0.19's grammar gives its legacy twin's
    project and version: only its ``cpython-X.Y`` changes the wheel, through the tags it is given."""
    framework = variant.framework
    if noarch_backend is not None and not framework.own_project:  # noarch builds that differ: one project each
        distribution, label = f"{validate_kernel_name(kernel)}-{noarch_backend}", None
    else:
        suffix = framework.project_suffix
        project = validate_kernel_name(kernel) if suffix is None else f"{validate_kernel_name(kernel)}-{suffix}"
        distribution, label = distribution_name(project, variant.backend_tag), framework.version_label
    version = kernel_version(base_version, None)
    if label is not None:
        version = _labelled(version, f"{label[0]}{dotted_str(label[1])}")
    name = WheelName(
        distribution=distribution,
        version=version,
        python_tag=python_tag,
        abi_tag=abi_tag,
        platform_tag=platform_tag,
    )
    name.filename  # noqa: B018  (raises InvalidWheelName for a name that cannot be written: checked up front)
    return name
