"""A git repository standing in for a Hub kernel repository (what ``--git-remote`` targets), and readers of it.

Shared by the publish tests (library: tests/kernelwheel/publish/test_release.py, command: tests/cli/test_publish.py) and the
build tests (tests/build/test_variants.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.helpers import kernel_repos


def make_remote(mirrors: Path) -> Path:
    """``mirrors/models/testorg/img2gray``: a git repo with a README commit on main, as olah serves it."""
    repo = mirrors / "models" / "testorg" / "img2gray"
    repo.mkdir(parents=True)
    (repo / "README.md").write_text("# img2gray\n")
    kernel_repos.git_commit_all(repo, "readme")
    return repo


def make_build(build: Path, so_cache: Path, *variants: str) -> Path:
    """``build/<variant>/`` for each of ``variants``, flat layout, kernel major version 0."""
    for variant in variants:
        kernel_repos.flat_variant(build, variant, so_cache, version=0)
    return build


def rehash(variant_dir: Path) -> None:
    """Rewrite ``metadata.json``'s digest after a deliberate change to the variant's files."""
    meta_path = variant_dir / "metadata.json"
    meta = json.loads(meta_path.read_text())
    files = {p.relative_to(variant_dir).as_posix(): p.read_bytes()
             for p in variant_dir.rglob("*") if p.is_file() and p != meta_path}
    meta["digest"] = kernel_repos.digest(files)
    meta_path.write_text(json.dumps(meta, indent=2))


def refs(repo: Path) -> dict[str, str]:
    out = subprocess.run(["git", "-C", str(repo), "for-each-ref", "--format=%(refname) %(objectname)"],
                         check=True, capture_output=True, text=True).stdout
    return dict(line.split(" ") for line in out.splitlines())


def tree(repo: Path, rev: str) -> set[str]:
    out = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "--name-only", rev],
                         check=True, capture_output=True, text=True).stdout
    return set(out.splitlines())


def show(repo: Path, rev: str, path: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), "show", f"{rev}:{path}"], check=True, capture_output=True).stdout
