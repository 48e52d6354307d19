"""Which of a kernel's build variants become wheels in this run, with a reason for every one that does not.

``select_variants`` is pure: it takes variant names and a ``VariantFilter`` and returns what is accepted and, for
every other name, why not. Two directories that would give the same wheel are resolved here too. A rejection is
either "not for this run" (another OS, a ``--variant`` filter, a duplicate) or ``invalid``: a name that is no
variant at all, which the command counts as a failure.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field

from kernelwheel.format.variant_pieces import CPUS
from kernelwheel.format.variants import Variant, display_name
from kernelwheel.io.errors import InvalidVariantName


@dataclass(frozen=True)
class VariantFilter:
    """What this run produces wheels for: manylinux only by default (platform tags are computed from ELF)."""

    oses: frozenset[str] = frozenset({"linux"})
    cpus: frozenset[str] = CPUS
    patterns: tuple[str, ...] = ()  # --variant globs; empty = all


@dataclass(frozen=True)
class VariantRejected:
    """A variant that will not become a wheel, and why."""

    name: str
    reason: str
    invalid: bool = False  # the name does not parse: bad input, not merely outside this run

    def __str__(self) -> str:
        return f"{self.name}: {self.reason}"


@dataclass
class Selection:
    accepted: list[Variant] = field(default_factory=list)
    rejected: list[VariantRejected] = field(default_factory=list)


def select_variants(names: Iterable[str], target: VariantFilter = VariantFilter()) -> Selection:
    """Parse and filter variant names; every name ends up either accepted or rejected with a reason.

    Two directories that would give the same wheel name are resolved here too: of ``-cxx11``/``-cxx98`` twins the
    one matching PyPI's torch build wins. Noarch directories are all accepted: whether they are one build is a
    question of their files, which ``noarch.plan_noarch`` answers.
    """
    selection = Selection()
    candidates: list[Variant] = []
    for name in sorted(set(names)):
        if target.patterns and not any(fnmatch.fnmatchcase(name, p) for p in target.patterns):
            unmatched = f"not matched by --variant {' '.join(target.patterns)}"
            selection.rejected.append(VariantRejected(display_name(name), unmatched))
            continue
        try:
            variant = Variant.parse(name)
        except InvalidVariantName as exc:
            selection.rejected.append(VariantRejected(display_name(name), str(exc), invalid=True))
            continue
        reason = _unsupported(variant, target)
        if reason:
            selection.rejected.append(VariantRejected(name, reason))
        else:
            candidates.append(variant)

    # cxx11/cxx98 twins, and a build named in both grammars, map to one wheel name.
    by_key: dict[tuple[object, ...], list[Variant]] = {}
    noarch: list[Variant] = []
    for v in candidates:
        if v.arch is None:
            noarch.append(v)
            continue
        key = (v.framework.twin(), v.arch, v.python_floor)
        by_key.setdefault(key, []).append(v)
    for group in by_key.values():
        keep = min(group, key=_twin_rank)
        selection.accepted.append(keep)
        selection.rejected.extend(VariantRejected(str(v), _same_wheel(v, keep)) for v in group if v is not keep)
    selection.accepted.extend(noarch)  # same build or one per backend: decided on their files (``noarch``)
    selection.accepted.sort(key=str)
    selection.rejected.sort(key=lambda r: r.name)
    return selection


def _twin_rank(variant: Variant) -> tuple[bool, bool, str]:
    """Of names that give one wheel: the framework's preferred spelling first (PyPI torch's C++ ABI), then the legacy
    grammar (every supported kernels release reads it; 0.17 refuses the new one), then by name."""
    return not variant.framework.preferred_twin(), not variant.legacy, str(variant)


def _same_wheel(variant: Variant, keep: Variant) -> str:
    if variant.framework == keep.framework:
        return f"same wheel as {keep} (the same build in the other variant grammar; the legacy name is kept)"
    because = keep.framework.preferred_because()
    assert because is not None  # twins' frameworks differ only where the framework prefers one (a C++ ABI tag)
    return f"same wheel as {keep} ({because})"


def _unsupported(variant: Variant, target: VariantFilter) -> str | None:
    arch = variant.arch
    if arch is None:
        return None
    if arch.os not in target.oses:
        return (
            f"OS {arch.os!r} is not produced by this run (only {', '.join(sorted(target.oses))}: platform tags "
            "are computed from ELF binaries)"
        )
    if arch.backend is not None and arch.backend.kind == "metal":
        return "the metal backend needs macOS; this run produces Linux wheels only"
    if arch.cpu not in target.cpus:
        return f"CPU {arch.cpu!r} is not produced by this run (only {', '.join(sorted(target.cpus))})"
    return None

