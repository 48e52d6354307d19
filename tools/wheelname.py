"""Wheel naming and tagging: the one place that spells distribution names, versions, requirements and tags.

The classic build (``tools.build_backend``), ``tools.hub2wheel`` and ``tools.index`` all go through here, so
``img2gray-cu130`` / ``0.1.0+torch2.14`` / ``torch==2.14.*`` / ``cp39-abi3`` are decided once.

Scheme (README, "Naming scheme"):

* distribution: ``<kernel>-<backend>`` (``img2gray-cu130``, ``img2gray-rocm71``, ``img2gray-cpu``); a noarch
  kernel keeps the bare kernel name.
* version: ``<kernel version>+torch<X.Y>`` for builds tied to one torch minor. The local label keeps the dot
  so that ``torch2.10`` sorts above ``torch2.9`` (PEP 440 compares dot-separated local segments as numbers).
  Stable-ABI builds carry no label.
* ``Requires-Dist``: ``torch==X.Y.*`` for a build tied to one minor, ``torch>=X.Y`` for a stable-ABI build.
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

from tools.errors import InvalidWheelName

_KERNEL_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
_BACKEND_TAG = re.compile(r"^(?:cpu|cu\d{3,4}|rocm\d{2,3}|xpu\d{4,6}|metal|npu|neuron|tpu|cann\d*)$")
_CUDA_VERSION = re.compile(r"^(\d+)\.(\d+)")
# Lowest glibc any manylinux tag names (PEP 600; manylinux2014 == manylinux_2_17).
_MIN_MANYLINUX_GLIBC = (2, 17)


def validate_kernel_name(kernel: str) -> str:
    """Return ``kernel`` if it can be a distribution name (PEP 508 name rules), else raise."""
    if not _KERNEL_NAME.match(kernel):
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
    if not _BACKEND_TAG.match(backend_tag):
        raise InvalidWheelName(
            f"backend tag {backend_tag!r} is not one of cpu, cuXYZ, rocmXY, xpuYYYYN, metal, ... "
            f"(expected e.g. 'cu130' or 'cpu')"
        )
    return f"{kernel}-{backend_tag}"


def cuda_backend_tag(cuda_version: str) -> str:
    """``"13.0"`` (``torch.version.cuda``, ``nvcc --version``) → ``"cu130"``; ``"12.8.93"`` → ``"cu128"``."""
    match = _CUDA_VERSION.match(cuda_version.strip())
    if not match:
        raise InvalidWheelName(f"CUDA version {cuda_version!r} is not of the form MAJOR.MINOR (e.g. '13.0')")
    major, minor = match.groups()
    return f"cu{major}{minor}"


def torch_minor(torch_version: str | Version) -> Version:
    """``"2.14.1+cu130"`` → ``Version("2.14")``: the part of torch's version that its C++ ABI is tied to."""
    try:
        version = torch_version if isinstance(torch_version, Version) else Version(str(torch_version))
    except InvalidVersion:
        raise InvalidWheelName(f"torch version {torch_version!r} is not a PEP 440 version") from None
    return Version(f"{version.major}.{version.minor}")


def torch_label(torch: Version) -> str:
    """``Version("2.14")`` → ``"torch2.14"``: the local version label, and the folder of that torch's sub-index."""
    return f"torch{torch.major}.{torch.minor}"


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
    try:
        version = base if isinstance(base, Version) else Version(str(base))
    except InvalidVersion:
        raise InvalidWheelName(f"kernel version {base!r} is not a PEP 440 version (expected e.g. '0.1.0')") from None
    if version.local is not None:
        raise InvalidWheelName(
            f"kernel version {base!r} already has a local label; expected a public version such as "
            f"{version.public!r}, the torch label is added here"
        )
    if torch is None:
        return version
    return Version(f"{version.public}+{torch_label(torch)}")


def torch_requirement(torch: Version, *, stable_abi: bool = False) -> Requirement:
    """``torch==2.14.*`` for a build tied to torch 2.14; ``torch>=2.10`` for a stable-ABI build targeting 2.10."""
    minor = f"{torch.major}.{torch.minor}"
    return Requirement(f"torch>={minor}" if stable_abi else f"torch=={minor}.*")


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
        # Round-trip through packaging so that a name we write is always one pip accepts.
        try:
            parse_wheel_filename(name)
        except InvalidWheelFilename as exc:
            raise InvalidWheelName(f"{name!r} is not a valid wheel filename: {exc}") from None
        return name

    def with_platform(self, platform_tag: str) -> WheelName:
        return WheelName(self.distribution, self.version, self.python_tag, self.abi_tag, platform_tag)

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
