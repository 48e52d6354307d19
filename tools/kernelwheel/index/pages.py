"""The HTML of a PEP 503 index: one page per project (PEP 658/714 attributes) and root pages listing projects.

A project page may also link plain files beside its wheels: the ``<name>-<version>-variants.json`` of its variant
wheels (``variants_json``), with ``#sha256=`` and no other attribute."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from urllib.parse import quote

from kernelwheel.index.indexed_wheel import IndexedWheel

# PEP 629: the API version of the pages we write (1.0: PEP 503 + PEP 658/714 attributes, no JSON).
REPOSITORY_VERSION = "1.0"


def _page(title: str, links: Iterable[str]) -> bytes:
    body = "\n".join(f"    {link}<br>" for link in links)
    return (
        "<!DOCTYPE html>\n<html>\n  <head>\n"
        f'    <meta name="pypi:repository-version" content="{REPOSITORY_VERSION}">\n'
        f"    <title>{html.escape(title)}</title>\n  </head>\n  <body>\n"
        f"    <h1>{html.escape(title)}</h1>\n{body}\n  </body>\n</html>\n"
    ).encode()


def project_page(project: str, wheels: Sequence[IndexedWheel], depth: int,
                 files: Sequence[tuple[str, str]] = ()) -> bytes:
    """The PEP 503 page of one project; ``depth`` is how many folders below the wheelhouse the page lies; ``files``:
    ``(file name, sha256)`` of other files of the wheelhouse to link after the wheels."""
    up = "../" * depth
    links = []
    for wheel in sorted(wheels, key=lambda w: (w.name.version, w.filename)):
        attributes = [f'href="{up}{quote(wheel.filename)}#sha256={wheel.sha256}"']
        if wheel.requires_python:
            attributes.append(f'data-requires-python="{html.escape(wheel.requires_python)}"')
        metadata = f"sha256={wheel.metadata_sha256}"
        attributes.append(f'data-core-metadata="{metadata}" data-dist-info-metadata="{metadata}"')
        links.append(f"<a {' '.join(attributes)}>{html.escape(wheel.filename)}</a>")
    links += [f'<a href="{up}{quote(name)}#sha256={sha256}">{html.escape(name)}</a>' for name, sha256 in files]
    return _page(f"Links for {project}", links)


def root_page(projects: Iterable[str], title: str = "Simple index") -> bytes:
    return _page(title, (f'<a href="{quote(p)}/">{html.escape(p)}</a>' for p in sorted(projects)))
