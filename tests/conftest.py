"""Shared fixtures: the wheels `make wheel` built, the build under test, and venvs with another torch.

``--img2gray-site DIR`` puts an unpacked build (``make install`` writes the classic one to
dist/site-classic) first on ``sys.path``, so the same op tests run against it instead of the installed build.

Nothing here imports torch or img2gray at import time: the toolkit's tests (tests/kernelwheel, tests/cli) also run in
a venv that has neither (`make test-toolkit`), which selects them with ``-m "not needs_torch and not needs_img2gray"``.
A test that uses a fixture below needing either is marked so here; a test that needs them otherwise says so itself.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

from kernelwheel.wheels.naming import WheelName, torch_label, torch_minor
from tests.helpers.repo import REPO_ROOT
from tests.helpers.venvs import fresh_venv, helper_venv

# The toolkit tests' fixtures (kernel repositories, olah on 127.0.0.1, helper venvs).
pytest_plugins = ["tests.helpers.hub_fixtures"]
WHEELHOUSE = REPO_ROOT / "wheelhouse"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--img2gray-site", type=Path, default=None,
                     help="test the img2gray package in this folder (e.g. dist/site-classic) instead of the installed one")


def pytest_configure(config: pytest.Config) -> None:
    site = config.getoption("--img2gray-site")
    if site is None:
        return
    if not (site / "img2gray" / "__init__.py").is_file():
        raise pytest.UsageError(f"--img2gray-site {site}: expected an unpacked img2gray build (img2gray/__init__.py) there")
    sys.path.insert(0, str(site.resolve()))


# Fixtures that need the compiled img2gray (the wheels `make wheel` wrote), or torch (this venv's, or one they install).
_NEEDS_IMG2GRAY = {"classic_wheel"}
_NEEDS_TORCH = {"classic_wheel", "torch213_base", "torch213_venv"}
_TOOLKIT_TESTS = (REPO_ROOT / "tests" / "kernelwheel", REPO_ROOT / "tests" / "cli")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests in ``test_*_releases.py`` compare the toolkit with kernels releases: marked ``kernels_release`` so that
    the upstream canary (.github/workflows/upstream-canary.yml) selects them with ``-m kernels_release``. Tests using
    a fixture of ``_NEEDS_IMG2GRAY`` or ``_NEEDS_TORCH`` get that marker. The toolkit's tests (tests/kernelwheel,
    tests/cli) are marked ``toolkit``, so that one marker expression, ``not toolkit or needs_torch or needs_img2gray``,
    selects what `make test` runs in .venv: the complement of `make test-toolkit`'s selection."""
    for item in items:
        if any(item.path.is_relative_to(folder) for folder in _TOOLKIT_TESTS):
            item.add_marker(pytest.mark.toolkit)
        if item.path.name.startswith("test_") and item.path.stem.endswith("_releases"):
            item.add_marker(pytest.mark.kernels_release)
        fixtures = set(getattr(item, "fixturenames", ()))
        if fixtures & _NEEDS_IMG2GRAY:
            item.add_marker(pytest.mark.needs_img2gray)
        if fixtures & _NEEDS_TORCH:
            item.add_marker(pytest.mark.needs_torch)


def pytest_report_header(config: pytest.Config) -> str:
    try:
        import img2gray
    except ImportError:
        return "img2gray: not installed here (the toolkit's tests need neither it nor torch)"

    info = img2gray.build_info()
    location = Path(img2gray.__file__).parent
    site = config.getoption("--img2gray-site")
    if site is not None and site.resolve() not in location.parents:
        raise pytest.UsageError(f"--img2gray-site {site}: img2gray was imported from {location} instead")
    return f"img2gray {img2gray.__version__}: {info.abi} ABI, {info.backend}, built with torch {info.torch} ({location})"


def _torch_version() -> str:
    try:
        return version("torch")
    except PackageNotFoundError:
        pytest.fail("this test needs torch installed in the venv that runs the tests (it is marked needs_torch)")


def _classic_wheels() -> list[Path]:
    minor = torch_minor(_torch_version())
    return [
        p
        for p in sorted(WHEELHOUSE.glob("img2gray_*.whl"))
        if WheelName.parse(p.name).version.local == torch_label(minor)
    ]


def stable_wheels(backend: str) -> list[Path]:
    """Stable-ABI wheels in wheelhouse/: no torch label in the version."""
    return [p for p in sorted(WHEELHOUSE.glob(f"img2gray_{backend}-*.whl")) if WheelName.parse(p.name).version.local is None]


@pytest.fixture(scope="session", autouse=True)
def private_hf_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """huggingface_hub's home for the whole session (hub2wheel keeps file digests and commit dates in its assets
    cache): tests never read or write the user's ~/.cache/huggingface. ``hf_env`` gives a test a fresh one."""
    home = tmp_path_factory.mktemp("hf-home")
    patch = pytest.MonkeyPatch()
    patch.setenv("HF_HOME", str(home))
    patch.delenv("HF_HUB_CACHE", raising=False)
    patch.delenv("HF_ASSETS_CACHE", raising=False)
    yield home
    patch.undo()


@pytest.fixture(scope="session")
def classic_wheel() -> Path:
    """The repaired classic wheel for the running torch, as `make wheel` writes it into wheelhouse/."""
    wheels = _classic_wheels()
    if len(wheels) != 1:
        pytest.fail(f"expected one img2gray wheel for torch {_torch_version()} in {WHEELHOUSE}, found "
                    f"{[p.name for p in wheels]}: run `make wheel` (or `make test`, which builds it)")
    return wheels[0]


# Besides torch: what tests/test_ops.py needs, so the op tests can run in this venv too.
OP_TEST_REQUIREMENTS = ("pytest>=8", "numpy", "pillow", "packaging>=26", "expecttest")


@pytest.fixture(scope="session")
def torch213_base() -> Path:
    """A venv with the CPU-only torch 2.13.0 (the file on this machine's disk) and the op tests' needs, made once
    (``.venv-torch213``, a helper venv: pytest's workers wait for the one that makes it) and reused across runs:
    tests only read it (run its python, build against its torch); installs go to torch213_venv."""
    return helper_venv(".venv-torch213", "torch==2.13.0", *OP_TEST_REQUIREMENTS)


@pytest.fixture
def torch213_venv(torch213_base: Path, tmp_path: Path) -> Path:
    """A fresh venv of this test's own that sees torch213_base's packages: what a test installs stays here, so no
    test sees another's installs (pip counts the shared torch as installed)."""
    site = next((torch213_base / "lib").glob("python3.*/site-packages"))
    return fresh_venv(tmp_path / "torch213-venv", share_site_packages_of=site)
