"""Fixtures (a pytest plugin loaded by tests/conftest.py) for the toolkit tests: kernel repositories, an olah Hub on 127.0.0.1, and helper venvs.

Helper venvs (``.venv-olah``, ``.venv-kernels``) are created here on first use from PyPI and reused across runs
(they are git-ignored); nothing has to be installed by hand.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import kernel_repos
from tests.helpers.servers import free_port, serving
from tests.helpers.venvs import helper_venv

OLAH_VERSION = "0.5.4"
KERNELS_VERSION = "0.11.3"


@pytest.fixture(autouse=True)
def servers_asked_again() -> None:
    """No server is noted as not answering when a test starts: kernelwheel notes one for the rest of the process
    (``answer_deadline.note_unanswered``), which a command forgets when it starts and a test of a module does not."""
    from kernelwheel.io import answer_deadline  # here: this plugin loads in venvs without the toolkit's rich

    answer_deadline.forget_unanswered()


@pytest.fixture(scope="session")
def so_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("so-cache")


@pytest.fixture(scope="session")
def flat_repo(tmp_path_factory: pytest.TempPathFactory, so_cache: Path) -> Path:
    return kernel_repos.make_flat_repo(tmp_path_factory.mktemp("flat") / "img2gray", so_cache)


@pytest.fixture(scope="session")
def nested_repo(tmp_path_factory: pytest.TempPathFactory, so_cache: Path) -> Path:
    return kernel_repos.make_nested_repo(tmp_path_factory.mktemp("nested") / "img2gray", so_cache)


@dataclass(frozen=True)
class HubRepos:
    """Git repositories served by olah, and the commits the tests expect."""

    endpoint: str
    mirrors: Path
    commits: dict[str, str]


def _make_hub_repos(mirrors: Path, so_cache: Path) -> dict[str, str]:
    commits: dict[str, str] = {}
    # testorg/img2gray: current flat layout; README on main, builds on version branches/tags.
    repo = mirrors / "models" / "testorg" / "img2gray"
    repo.mkdir(parents=True)
    (repo / "README.md").write_text("# img2gray\n")
    commits["main"] = kernel_repos.git_commit_all(repo, "readme")
    kernel_repos.git(repo, "checkout", "-q", "-b", "v1")
    kernel_repos.make_flat_repo(repo, so_cache)
    commits["v1.0.0"] = kernel_repos.git_commit_all(repo, "build v1.0.0")
    kernel_repos.git(repo, "tag", "v1.0.0")
    kernel_repos.flat_variant(repo / "build", "torch212-cxx11-cpu-x86_64-linux", so_cache)
    commits["v1.1.0"] = kernel_repos.git_commit_all(repo, "build v1.1.0", date="2026-02-03T04:05:06Z")
    kernel_repos.git(repo, "tag", "v1.1.0")
    commits["v1"] = commits["v1.1.0"]
    kernel_repos.git(repo, "checkout", "-q", "-b", "v2", "main")
    kernel_repos.flat_variant(repo / "build", "torch213-cxx11-cpu-x86_64-linux", so_cache, version=2)
    commits["v2"] = kernel_repos.git_commit_all(repo, "build v2", date="2026-03-01T12:00:00Z")
    kernel_repos.git(repo, "checkout", "-q", "main")
    # testorg/img2gray-nested: the older nested layout, versioned by tag.
    nested = mirrors / "models" / "testorg" / "img2gray-nested"
    nested.mkdir(parents=True)
    kernel_repos.make_nested_repo(nested, so_cache)
    commits["nested"] = kernel_repos.git_commit_all(nested, "nested build")
    kernel_repos.git(nested, "tag", "v0.1.0")
    _make_dependency_repos(mirrors, commits)
    return commits


def _make_dependency_repos(mirrors: Path, commits: dict[str, str]) -> None:
    """Kernels with kernel-depends: relu-plus → relu (version 1), a cycle cyc-a ↔ cyc-b, one that needs a missing
    kernel. Each is published on a v1 branch, as kernel-builder publishes API majors."""
    def publish(name: str, init: str, depends: list[dict[str, object]], minver: str | None = None,
                modules: dict[str, str] | None = None) -> None:
        repo = mirrors / "models" / "testorg" / name
        repo.mkdir(parents=True)
        for variant in ("torch-cpu", "torch-cuda"):  # the same files: one noarch wheel; kernels loads either
            kernel_repos.python_kernel_variant(repo / "build", variant, name=name, init=init,
                                               kernel_depends=depends, minver=minver, modules=modules)
        commits[name] = kernel_repos.git_commit_all(repo, f"build {name}", branch="v1")
        kernel_repos.git(repo, "branch", "main")

    publish("relu", kernel_repos.RELU_INIT, [])
    publish("relu-plus", kernel_repos.RELU_PLUS_INIT, [{"repo-id": "testorg/relu", "version": 1}], minver="0.17.0",
            modules={"layers.py": kernel_repos.RELU_PLUS_LAYERS})
    cyclic = '"""a kernel in a dependency cycle."""\n'
    publish("cyc-a", cyclic, [{"repo-id": "testorg/cyc-b", "version": 1}])
    publish("cyc-b", cyclic, [{"repo-id": "testorg/cyc-a", "version": 1}])
    publish("needs-missing", cyclic, [{"repo-id": "testorg/nope", "version": 1}])


@contextlib.contextmanager
def olah_server(mirrors: Path, base: Path, *, workers: int = 1) -> Iterator[str]:
    """Run olah (offline mode: nothing goes upstream) serving the git repos under ``mirrors``; yields the endpoint.

    ``workers`` > 1: that many olah processes behind one port (its ``--workers``). One olah process serves ~20-27 MB/s
    whatever the number of connections (benchmarks/NOTES.md says why): concurrent downloads only run in parallel
    across several processes."""
    from tools.cli.loopback_hub import olah_config  # here: this plugin loads in venvs without the toolkit's rich

    venv = helper_venv(".venv-olah", f"olah=={OLAH_VERSION}")
    port = free_port()
    config = base / "olah.toml"
    config.write_text(olah_config(port, repos=base / "repos", mirrors=mirrors))
    endpoint = f"http://127.0.0.1:{port}"
    argv = [str(venv / "bin" / "olah-cli"), "-c", str(config), *(["--workers", str(workers)] if workers > 1 else [])]
    with serving(argv, endpoint + "/api/models/testorg/img2gray/refs",
                 log=base / "olah.log", cwd=base, seconds=60, any_status=True):  # any answer: up
        yield endpoint


@pytest.fixture(scope="session")
def hub_repos(tmp_path_factory: pytest.TempPathFactory, so_cache: Path) -> Iterator[HubRepos]:
    """olah serving local git repositories on 127.0.0.1."""
    base = tmp_path_factory.mktemp("olah")
    mirrors = base / "mirrors"
    commits = _make_hub_repos(mirrors, so_cache)
    with olah_server(mirrors, base) as endpoint:
        yield HubRepos(endpoint, mirrors, commits)


@pytest.fixture
def hf_env(hub_repos: HubRepos, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point huggingface_hub at olah with an empty cache of its own; returns the cache directory."""
    monkeypatch.setenv("HF_ENDPOINT", hub_repos.endpoint)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    return tmp_path / "hf-home" / "hub"


@pytest.fixture(scope="session")
def kernels_venv() -> Path:
    """kernels 0.11.3 (the last release with ``kernels to-wheel``) in its own venv."""
    return helper_venv(".venv-kernels", f"kernels=={KERNELS_VERSION}", "wheel")


def pip_install_by_name(venv: Path, wheelhouse: Path, *names: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--find-links", str(wheelhouse), *names],
        capture_output=True, text=True,
    )
