"""``<name>-<version>-variants.json``: what an index serves beside a version's variant wheels (PEP 825, a draft).

An installer that knows wheel variants (uv 0.13.9 with ``--preview-features wheel-variants``) reads this file, linked
from the project page as an ordinary file, before it picks a wheel: without it uv calls every variant wheel of the
version unsupported. It is the variant wheels' own ``.dist-info/variant.json`` files merged: the shared
``$schema``, ``default-priorities`` and ``providers``, and every label with its properties. Two wheels that disagree
(another provider, one label with two meanings) cannot be served as one version: the index refuses them, in one line
naming both files.

Each wheel's ``variant.json`` is checked when the wheel is indexed (``variant_document``) and kept, as canonical
JSON, in the index state: an incremental run merges without opening a wheel again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from kernelwheel.io.errors import InvalidWheel
from kernelwheel.wheels.variant_names import NULL_LABEL, VariantWheelName

SUFFIX = "-variants.json"
_SHARED = ("$schema", "default-priorities", "providers")  # what every variant of one version must agree on


def variants_file_name(name: VariantWheelName) -> str:
    """``img2gray-0.1.0-variants.json``: the name spelled as in the wheel's file name (PEP 427 escaping)."""
    return f"{name.project}-{name.version}{SUFFIX}"


def variant_document(data: bytes | None, filename: str, label: str) -> str:
    """A variant wheel's ``variant.json`` checked (an object with ``$schema``, ``default-priorities``, ``providers``
    and ``variants`` holding exactly the wheel's label; ``null`` with no properties), as canonical JSON;
    ``InvalidWheel`` naming the file and what was expected otherwise."""
    where = f"{filename}: .dist-info/variant.json"
    if data is None:
        raise InvalidWheel(f"{filename}: a variant wheel (label {label!r}) without .dist-info/variant.json; expected "
                           "one saying what the label stands for")
    try:
        document = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise InvalidWheel(f"{where}: not JSON ({type(exc).__name__}: {str(exc)[:120]})") from None
    if not isinstance(document, dict) or set(document) != {*_SHARED, "variants"}:
        keys = sorted(document) if isinstance(document, dict) else type(document).__name__
        raise InvalidWheel(f"{where}: expected an object with $schema, default-priorities, providers and variants, "
                           f"got {keys!r:.120}")
    variants = document["variants"]
    if not isinstance(variants, dict) or list(variants) != [label]:
        raise InvalidWheel(f"{where}: expected variants to describe only the wheel's label {label!r}, got "
                           f"{sorted(variants) if isinstance(variants, dict) else variants!r:.120}")
    properties = variants[label]
    if not _is_properties(properties):
        raise InvalidWheel(f"{where}: the properties of {label!r} must map namespaces to features to lists of "
                           f"strings, got {properties!r:.120}")
    if label == NULL_LABEL and properties:
        raise InvalidWheel(f"{where}: the null variant has properties; expected none")
    if label != NULL_LABEL and not properties:
        raise InvalidWheel(f"{where}: {label!r} has no properties; expected some (only the null variant has none)")
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def _is_properties(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(features, dict) and all(
            isinstance(values, list) and values and all(isinstance(v, str) for v in values)
            for values in features.values())
        for features in value.values())


def merged_documents(variant_wheels: Iterable[tuple[VariantWheelName, str, str]]) -> dict[str, bytes]:
    """``variants.json`` file name → its bytes, for ``(name, filename, document)`` of every variant wheel (the
    document as ``variant_document`` gives it); ``InvalidWheel`` in one line when two wheels of one version
    disagree."""
    by_file: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for name, filename, document in variant_wheels:
        by_file.setdefault(variants_file_name(name), []).append((filename, json.loads(document)))
    return {file: _merge(file, sorted(entries, key=lambda e: e[0])) for file, entries in sorted(by_file.items())}


def _merge(file: str, entries: list[tuple[str, dict[str, Any]]]) -> bytes:
    first_file, first = entries[0]
    variants: dict[str, Any] = {}
    owner: dict[str, str] = {}
    for filename, document in entries:
        for key in _SHARED:
            if document[key] != first[key]:
                raise InvalidWheel(f"{first_file} and {filename}: their variant.json give another {key}; expected one "
                                   f"for every variant wheel of {file.removesuffix(SUFFIX)} (remove one, or rebuild "
                                   "both with the same tool)")
        ((label, properties),) = document["variants"].items()
        if label in variants and variants[label] != properties:
            raise InvalidWheel(f"{owner[label]} and {filename}: the variant label {label!r} has other properties in "
                               f"each; expected one meaning per label in {file.removesuffix(SUFFIX)}")
        variants[label], owner[label] = properties, owner.get(label, filename)
    merged: Mapping[str, Any] = {**{key: first[key] for key in _SHARED}, "variants": variants}
    return (json.dumps(merged, indent=2, sort_keys=True) + "\n").encode()
