"""Refuse to load when two img2gray builds share this folder (CuPy's duplicate-installation check).

``img2gray-cu130`` and ``img2gray-cpu`` both install the package ``img2gray``: installing the second overwrites the
first's files, and uninstalling one leaves the other listed but broken. Loading whichever ``.so`` happens to be
there would hide that, so the import fails and says how to repair it.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

_PACKAGE = "img2gray"


def installed_builds(package_dir: Path) -> list[str]:
    """The distributions (``img2gray-*``) whose RECORD puts files into ``package_dir``, sorted."""
    site = package_dir.parent.resolve()
    found = set()
    for dist in importlib.metadata.distributions(path=[str(site)]):
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name != _PACKAGE and not name.startswith(_PACKAGE + "-"):
            continue
        if any(str(f).replace("\\", "/") == f"{_PACKAGE}/__init__.py" for f in dist.files or ()):
            found.add(dist.metadata["Name"])
    return sorted(found)


def check_single_build(package_dir: Path) -> None:
    builds = installed_builds(package_dir)
    if len(builds) > 1:
        raise ImportError(
            f"{' and '.join(builds)} are all installed into {package_dir}, and only one img2gray build can be: "
            f"each overwrote the other's files. Repair with: pip uninstall -y {' '.join(builds)} && "
            "pip install <the one you want>"
        )
