"""A kernel build-variant name (``build/<variant>/``) as one typed value, ``Variant``, and what the build targets.

A ``Variant`` is its pieces (``variant_pieces``: the framework, the arch, the Python) read by either name grammar
(``variant_grammars``). ``Variant.parse`` raises ``InvalidVariantName`` with the exact reason, and refuses digits that
do not read back the same (``cuda-13.00``): a name is exactly one folder; ``str(variant)`` gives the name back.
Which variants become wheels is decided in ``selection``.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from kernelwheel.format.frameworks import FrameworkRules, Sdk
from kernelwheel.format.variant_grammars import parse_pieces
from kernelwheel.format.variant_pieces import Arch, Python, check_ascii
from kernelwheel.io.errors import InvalidVariantName


def display_name(name: str) -> str:
    """``name`` as it can be shown on one line: itself when printable (and encodable: a folder name with invalid
    UTF-8 arrives as lone surrogates), else its ``ascii()`` escape."""
    if name.isprintable() and not any("\ud800" <= c <= "\udfff" for c in name):
        return name
    return ascii(name)


@dataclass(frozen=True)
class Variant:
    """One ``build/<variant>/`` name: an arch variant (framework + arch), a noarch one, or an SDK. ``python`` is the
    ``cpython-X.Y-abi`` a 0.19-grammar name spells; None for a legacy name (implicitly 3.9 abi3) or one without
    compiled parts."""

    framework: FrameworkRules  # its rules: ``frameworks``
    arch: Arch | None = None
    python: Python | None = None

    @classmethod
    def parse(cls, name: str) -> Variant:
        """Parse a variant directory name (either grammar); ``InvalidVariantName`` says precisely what is wrong."""
        check_ascii(name, "variant")
        variant = cls(*parse_pieces(name))
        if str(variant) != name:  # e.g. torch2_09 / cu0128 / cuda-13.00: digits that do not round-trip
            raise InvalidVariantName(f"variant {name!r}: not in canonical form (reads back as {str(variant)!r})")
        return variant

    def __str__(self) -> str:
        if self.arch is None:
            return str(self.framework)
        if self.python is None:
            return f"{self.framework}-{self.arch}"
        parts = [self.framework.spelled(legacy=False)]
        if self.arch.backend is not None:
            parts.append(self.arch.backend.spelled(legacy=False))
        return "-".join([*parts, str(self.python), self.arch.cpu, self.arch.os])

    @property
    def legacy(self) -> bool:
        """Whether the name is in the legacy grammar, the one every supported kernels release reads."""
        return self.python is None and self.framework.legacy_grammar

    @property
    def python_floor(self) -> Python | None:
        """The Python the compiled parts need: as spelled, else 3.9 abi3 for a legacy arch name; None without an
        arch."""
        if self.arch is None:
            return None
        return self.python or Python()

    @property
    def sdk(self) -> bool:
        return isinstance(self.framework, Sdk)  # a question of kind, not a rule

    @property
    def stable_abi(self) -> bool:
        return self.framework.stable_abi

    @property
    def torch(self) -> Version | None:
        """The torch minor this build targets (``None`` for noarch, SDKs and frameworks without torch)."""
        return self.framework.torch

    @property
    def depends_backend(self) -> str:
        """The backend kernels keys ``python-depends`` by: ``cuda``, ``cpu``, ... (``universal`` for the legacy
        noarch variant, which only gets the general names)."""
        if self.arch is not None:
            return "universal" if self.arch.backend is None else self.arch.backend.kind
        return self.framework.noarch_backend or "universal"

    @property
    def backend_tag(self) -> str | None:
        """The ``wheelname.distribution_name`` suffix: ``cu128``, ``rocm71``, ``cpu``; ``None`` for noarch."""
        if self.arch is None or self.arch.backend is None:
            return None
        return self.arch.backend.tag
