"""Refuse to load when two img2gray builds share this folder (CuPy's duplicate-installation check).

``img2gray-cu130`` and ``img2gray-cpu`` both install the package ``img2gray``: installing the second overwrites the
first's files, and uninstalling one leaves the other listed but broken. Loading whichever ``.so`` happens to be
there would hide that, so the import fails and says how to repair it.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Callable, Optional

_PACKAGE = "img2gray"


def installed_builds(package_dir: Path) -> list[str]:
    """The distributions (``img2gray-*``) whose RECORD puts files into ``package_dir``, sorted."""
    return sorted({dist.metadata["Name"] for dist in _owners(package_dir.parent, _PACKAGE, named=_is_img2gray)})


def own_distribution() -> Optional[importlib.metadata.Distribution]:
    """The installed distribution this copy of the package came from (``img2gray-cu130``, or the wheel hub2wheel
    made from a Hub build, whose package has the build's own name); None without a single one (an unpacked build
    without its ``.dist-info``). Reads every RECORD beside the package: for error messages, not for every import."""
    package_dir = Path(__file__).parent
    owners = _owners(package_dir.parent, package_dir.name, named=lambda name: True)
    return owners[0] if len(owners) == 1 else None


def _is_img2gray(name: str) -> bool:
    name = name.lower().replace("_", "-")
    return name == _PACKAGE or name.startswith(_PACKAGE + "-")


def _owners(site: Path, package: str, *, named: Callable[[str], bool]) -> list[importlib.metadata.Distribution]:
    """The distributions in ``site`` whose name passes ``named`` (checked first: it costs no RECORD read) and whose
    RECORD lists ``<package>/__init__.py``."""
    init = f"{package}/__init__.py"
    return [dist for dist in importlib.metadata.distributions(path=[str(site.resolve())])
            if named(dist.metadata["Name"] or "")
            and any(str(f).replace("\\", "/") == init for f in dist.files or ())]


def check_single_build(package_dir: Path) -> None:
    builds = installed_builds(package_dir)
    if len(builds) > 1:
        raise ImportError(
            f"{' and '.join(builds)} are all installed into {package_dir}, and only one img2gray build can be: "
            f"each overwrote the other's files. Repair with: pip uninstall -y {' '.join(builds)} && "
            "pip install <the one you want>"
        )
