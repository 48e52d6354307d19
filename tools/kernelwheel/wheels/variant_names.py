"""Variant wheel file names (PEP 825, a draft): ``{name}-{version}[-{build}]-{py}-{abi}-{plat}-{label}.whl``.

A variant wheel is an ordinary wheel whose file name carries one more component, its variant label, and whose
``.dist-info/variant.json`` says what that label stands for (``variant_wheels``). packaging's
``parse_wheel_filename`` refuses a sixth component that is not a build tag, and a seventh at all, so the index would
refuse (or mis-read) such files: this module owns the parser. pip refuses these names too ("invalid wheel
filename"), which is what lets them sit beside the backend-named wheels on one index.

The rules are the ones uv 0.13.9 applies (docs/gpu-targets.md, "Wheel variants"): a label is made of ``[a-z0-9_.]``
(uv sets no length; this tool keeps labels to ``MAX_LABEL_LENGTH``), and ``null`` is the label of the variant with no
properties. Six components are a build tag when the
third starts with a digit (a Python tag never does), else a label.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from kernelwheel.io.errors import InvalidWheelName
from kernelwheel.wheels.naming import MAX_WHEEL_FILENAME_BYTES, WheelName

NULL_LABEL = "null"  # the variant without properties: what an installer takes when no other variant fits
MAX_LABEL_LENGTH = 64  # ours: uv 0.13.9 takes a longer one, a file name has 255 bytes
_LABEL = re.compile(rf"[a-z0-9_.]{{1,{MAX_LABEL_LENGTH}}}", re.ASCII)


def check_label(label: str) -> str:
    """``label`` when it is a variant label; ``InvalidWheelName`` saying what a label may hold otherwise."""
    if not _LABEL.fullmatch(label):
        raise InvalidWheelName(f"variant label {label!r:.40}: expected 1 to {MAX_LABEL_LENGTH} characters of "
                               "a-z, 0-9, '_' and '.' (e.g. cu130, cpu_torch213, null)")
    return label


@dataclass(frozen=True)
class VariantWheelName(WheelName):
    """A wheel name with a variant label: the same distribution, version and tags, one more file-name component."""

    label: str

    @property
    def filename(self) -> str:
        check_label(self.label)
        plain = WheelName(self.distribution, self.version, self.python_tag, self.abi_tag, self.platform_tag)
        name = f"{plain.filename.removesuffix('.whl')}-{self.label}.whl"  # the plain name's checks, then the label
        if len(name.encode()) > MAX_WHEEL_FILENAME_BYTES:
            raise InvalidWheelName(f"variant wheel filename {name[:60]!r}... is over the {MAX_WHEEL_FILENAME_BYTES} "
                                   "bytes that fit: shorten the kernel name or the version")
        return name


def is_variant_filename(filename: str) -> bool:
    """Whether ``filename`` is spelled as a variant wheel (a label after the platform tag); nothing is validated."""
    if not filename.endswith(".whl"):
        return False
    parts = filename[: -len(".whl")].split("-")
    return len(parts) == 7 or (len(parts) == 6 and not parts[2][:1].isdigit())


def parse_variant_filename(filename: str) -> VariantWheelName:
    """``img2gray-0.1.0-cp39-abi3-manylinux_2_28_x86_64-cu130.whl`` → its parts; ``InvalidWheelName`` naming the file
    and what was expected otherwise. The name without its label must be a wheel name packaging accepts, and a
    build tag (``name-1.0-1b-py3-none-any-null.whl``) is refused: this tool never writes one."""
    if not is_variant_filename(filename):
        raise InvalidWheelName(f"{filename!r:.120}: expected a variant wheel name, "
                               "{name}-{version}-{python}-{abi}-{platform}-{label}.whl")
    stem, label = filename[: -len(".whl")].rsplit("-", 1)
    check_label(label)
    if len(stem.split("-")) != 5:
        raise InvalidWheelName(f"{filename!r:.120}: a variant wheel with a build tag; expected none")
    try:
        parse_wheel_filename(f"{stem}.whl")
    except InvalidWheelFilename as exc:
        raise InvalidWheelName(f"{filename!r:.120}: without its label it is no wheel name ({exc})") from None
    plain = WheelName.parse(f"{stem}.whl")
    return VariantWheelName(plain.distribution, plain.version, plain.python_tag, plain.abi_tag, plain.platform_tag,
                            label)


def parse_any_wheel_filename(filename: str) -> WheelName:
    """A plain wheel name (``WheelName.parse``) or a variant one (``parse_variant_filename``), as it is spelled."""
    return parse_variant_filename(filename) if is_variant_filename(filename) else WheelName.parse(filename)
