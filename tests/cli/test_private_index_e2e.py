"""End to end: wheels → tools.index / pypiserver on loopback → pip and uv installs into fresh venvs → run the op.

The index holds the real classic wheel (``classic_wheel`` from tests/conftest.py; a pure-Python stand-in
until that fixture exists), the converted wheels (``converted_wheels``: tools.hub2wheel run on ``flat_repo``),
and decoys: builds of ``img2gray-cu130`` for torch 2.13 and 2.15, including a *newer* release ``0.2.0+torch2.13``
that an unpinned install would pick, downgrading torch. PyPI is an extra index throughout, so a wrong
resolution would really fetch another torch. Every install must leave the venv's torch exactly as it was.

Cost: two fresh venvs with torch 2.14.1, made by uv from the same wheels pip picks on this machine (hard
links out of uv's cache: ~20 s cold, ~1 s warm), not by two 1.5-minute pip installs.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from packaging.utils import canonicalize_name

from kernelwheel.cli import hub2wheel
from kernelwheel.index.install_plan import plan_install
from kernelwheel.index.target_environment import Environment
from kernelwheel.index.writer import write_index
from kernelwheel.io.errors import NoCompatibleWheel
from kernelwheel.wheels.naming import WheelName, labelled_torch, torch_label
from tests.helpers import standin_wheels as standin
from tests.helpers.pypiserver import PASSWORD, USER
from tests.helpers.pypiserver import pypiserver as run_pypiserver
from tests.helpers.repo import REPO_ROOT
from tests.helpers.servers import free_port, serving

pytestmark = [pytest.mark.slow, pytest.mark.needs_torch]  # every install here is checked against a real torch
PROJECT = "img2gray-cu130"
PYPI = "https://pypi.org/simple"


def suite_torch() -> str:
    """What the fresh venvs get: the torch of the venv that runs the tests (2.14.1)."""
    return importlib.metadata.version("torch")

_TIMEOUT_S = 300

_RUN_OP = """
import json, torch, img2gray
x = torch.randint(0, 256, (4, 5, 3), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
y = img2gray.img2gray(x)
ref = (x.to(torch.float32) @ torch.tensor([0.299, 0.587, 0.114])).round()
print(json.dumps({"torch": torch.__version__, "module": img2gray.__file__, "shape": list(y.shape),
                  "dtype": str(y.dtype), "max_err": float((y.to(torch.float32) - ref).abs().max())}))
"""

_TORCH_STATE = """
import hashlib, importlib.metadata, json
dist = importlib.metadata.distribution("torch")
record = dist.read_text("RECORD") or ""
print(json.dumps({"version": dist.version, "record_sha256": hashlib.sha256(record.encode()).hexdigest(),
                  "location": str(dist.locate_file("torch"))}))
"""


# ---------------------------------------------------------------------------------------------------- helpers


def _run(
    argv: list[str], *, env: dict[str, str], check: bool = True, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=_TIMEOUT_S)
    if check and result.returncode != 0:
        pytest.fail(f"{' '.join(argv)} exited {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result


@pytest.fixture(scope="module")
def installer_env() -> dict[str, str]:
    """The environment for pip/uv: no machine-wide pip config or extra indexes, only what a command says.

    The CA bundle is kept (the registries are reached through a proxy with its own CA on these machines).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", UV_NO_CONFIG="1")
    ca = os.environ.get("PIP_CERT") or os.environ.get("SSL_CERT_FILE")
    if ca:
        env.update(PIP_CERT=ca, SSL_CERT_FILE=ca)
    return env


@pytest.fixture(scope="module")
def uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    assert Path(found).exists(), "uv is missing: it is listed in requirements/test-toolkit.txt"
    return found


def torch_state(python: Path) -> dict[str, str]:
    return json.loads(_run([str(python), "-c", _TORCH_STATE], env=dict(os.environ)).stdout)


def run_op(python: Path) -> dict[str, object]:
    return json.loads(_run([str(python), "-W", "ignore", "-c", _RUN_OP], env=dict(os.environ)).stdout)


# ---------------------------------------------------------------------------------------------------- venvs


@pytest.fixture(scope="module")
def torch_requirements(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``name @ url`` for torch and every dependency, exactly as pip resolves them with this machine's config.

    pip knows where this machine keeps torch (local disk, a capped mirror); uv reads no pip config, so it is
    handed the very files pip would use and installs them with ``--no-deps``.
    """
    folder = tmp_path_factory.mktemp("torch-req")
    report = folder / "report.json"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet", "--report",
         str(report), f"torch=={suite_torch()}"],
        check=True, timeout=_TIMEOUT_S, capture_output=True,
    )  # fmt: skip
    lines = [
        f"{item['metadata']['name']} @ {item['download_info']['url']}"
        for item in json.loads(report.read_text())["install"]
    ]
    requirements = folder / "torch.txt"
    requirements.write_text("\n".join(lines) + "\n")
    return requirements


def _fresh_venv(path: Path, *, with_pip: bool, uv: str, torch_requirements: Path, env: dict[str, str]) -> Path:
    if with_pip:
        _run([sys.executable, "-m", "venv", str(path)], env=env)  # pip from ensurepip, as a user gets it
    else:
        _run([uv, "venv", "--python", sys.executable, str(path)], env=env)
    python = path / "bin" / "python"
    _run([uv, "pip", "install", "--python", str(python), "--no-deps", "--link-mode", "hardlink",
          "-r", str(torch_requirements)], env={**env, "UV_NO_CONFIG": "1"})  # fmt: skip
    assert torch_state(python)["version"] == suite_torch()
    return python


@pytest.fixture(scope="module")
def pip_venv(
    tmp_path_factory: pytest.TempPathFactory, uv: str, torch_requirements: Path, installer_env: dict[str, str]
) -> Path:
    return _fresh_venv(tmp_path_factory.mktemp("venvs") / "pip", with_pip=True, uv=uv,
                       torch_requirements=torch_requirements, env=installer_env)  # fmt: skip


@pytest.fixture(scope="module")
def uv_venv(
    tmp_path_factory: pytest.TempPathFactory, uv: str, torch_requirements: Path, installer_env: dict[str, str]
) -> Path:
    return _fresh_venv(tmp_path_factory.mktemp("venvs") / "uv", with_pip=False, uv=uv,
                       torch_requirements=torch_requirements, env=installer_env)  # fmt: skip


# --------------------------------------------------------------------------------------------------- wheels and servers


def _optional_fixture(request: pytest.FixtureRequest, name: str) -> object | None:
    try:
        return request.getfixturevalue(name)
    except pytest.FixtureLookupError:
        return None


@pytest.fixture(scope="module")
def converted_wheels(flat_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The conversion of the local kernel repo (``flat_repo``), under its own name ``img2gray-hub-*``.

    The distinct name keeps its builds (a stable-ABI ``1`` and ``1+torch2.13``, which outrank ``0.1.0``) from
    competing with the classic wheel that the install tests expect; they are indexed, checked and uploaded.
    """
    out = tmp_path_factory.mktemp("converted")
    assert hub2wheel.main([str(flat_repo), "--out", str(out), "--dist-name", "img2gray-hub"]) == 0
    converted = sorted(out.glob("*.whl"))
    assert converted, f"tools.hub2wheel wrote no wheel into {out}"
    return converted


@pytest.fixture(scope="module")
def wheels(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           converted_wheels: list[Path]) -> dict[str, list[Path]]:
    """``{"target": [the torch-2.14 build], "decoys": [...], "converted": [...]}``, all in one folder."""
    house = tmp_path_factory.mktemp("wheels")
    classic = _optional_fixture(request, "classic_wheel")
    if isinstance(classic, Path):
        target = Path(shutil.copy2(classic, house / classic.name))
    else:  # until tests/conftest.py provides the real one
        target = standin.write_standin(house, torch="2.14")
    converted_copies = [Path(shutil.copy2(w, house / w.name)) for w in converted_wheels
                        if not (house / w.name).exists()]
    decoys = [
        standin.write_standin(house, torch="2.13"),
        standin.write_standin(house, torch="2.15"),
        standin.write_standin(house, torch="2.13", base_version="0.2.0"),  # newer release, older torch
    ]
    return {"target": [target], "decoys": decoys, "converted": converted_copies}


@pytest.fixture(scope="module")
def static_index(wheels: dict[str, list[Path]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``tools.cli.index`` over every wheel (at /) and over the decoys alone (at /decoys/), served by http.server."""
    root = wheels["target"][0].parent
    write_index(root)
    decoys = root / "decoys"
    decoys.mkdir()
    for wheel in wheels["decoys"]:
        os.link(wheel, decoys / wheel.name)
    write_index(decoys)
    port = free_port()
    with serving([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(root)],
                 f"http://127.0.0.1:{port}/simple/"):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def pypiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """pypiserver on loopback as docs/private-index.md runs it (``--disable-fallback``): anyone may read, only
    USER/PASSWORD (htpasswd) may upload (tests/helpers/pypiserver.py)."""
    with run_pypiserver(tmp_path_factory.mktemp("pypiserver")) as url:
        yield url


def _twine_upload(
    url: str, files: list[Path], env: dict[str, str], *credentials: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in env.items() if not k.startswith("TWINE_")}
    return _run([sys.executable, "-m", "twine", "upload", "--non-interactive", "--disable-progress-bar",
                 "--repository-url", url + "/", *credentials, *map(str, files)], env=env, check=False)  # fmt: skip


@pytest.fixture(scope="module")
def uploaded(pypiserver: str, wheels: dict[str, list[Path]], installer_env: dict[str, str]) -> str:
    """Every wheel uploaded the documented way: ``tools.cli.upload`` (validates, then twine; TWINE_PASSWORD)."""
    files = wheels["target"] + wheels["decoys"] + wheels["converted"]
    env = {k: v for k, v in installer_env.items() if not k.startswith("TWINE_")}
    env["TWINE_PASSWORD"] = PASSWORD
    result = _run([sys.executable, "-m", "tools.cli.upload", "--repository-url", pypiserver + "/", "-u", USER,
                   *map(str, files)], env=env, check=False, cwd=REPO_ROOT)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return pypiserver


def _uninstalled(python: Path, uv: str, env: dict[str, str]) -> dict[str, str]:
    """Uninstall PROJECT from the venv; torch's state then, for the install under test to leave unchanged."""
    _run([uv, "pip", "uninstall", "--python", str(python), PROJECT], env=env, check=False)
    return torch_state(python)


def _assert_installed_and_runs(python: Path, wheel: Path, before: dict[str, str]) -> None:
    result = run_op(python)
    assert result["shape"] == [4, 5] and result["dtype"] == "torch.uint8"
    assert float(result["max_err"]) <= 1.0  # type: ignore[arg-type]
    assert str(result["module"]).startswith(str(python.parent.parent))  # the venv's copy, not the checkout's
    installed = _run([str(python), "-c", f"import importlib.metadata as m; print(m.version({PROJECT!r}))"],
                     env=dict(os.environ)).stdout.strip()  # fmt: skip
    assert installed == str(WheelName.parse(wheel.name).version)
    assert torch_state(python) == before, "torch changed"
    assert str(result["torch"]).startswith(suite_torch())


# ---------------------------------------------------------------------------------------------------- tests


def _twine_check_strict(files: list[Path], env: dict[str, str]) -> None:
    result = _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, files)], env=env, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASSED") == len(files)


def test_twine_check_strict_passes_on_the_classic_wheel_and_index_fixtures(
    wheels: dict[str, list[Path]], installer_env: dict[str, str]
) -> None:
    _twine_check_strict(wheels["target"] + wheels["decoys"], installer_env)


def test_twine_check_strict_passes_on_converted_wheels(
    wheels: dict[str, list[Path]], installer_env: dict[str, str]
) -> None:
    assert wheels["converted"]
    _twine_check_strict(wheels["converted"], installer_env)


def test_converted_wheels_are_indexed_under_their_torch(static_index: str, wheels: dict[str, list[Path]]) -> None:
    assert wheels["converted"]
    for wheel in wheels["converted"]:
        name = WheelName.parse(wheel.name)
        pages = [f"{static_index}/simple/{canonicalize_name(name.distribution)}/"]
        label = labelled_torch(name.version)
        if label is not None:
            pages.append(f"{static_index}/simple/{torch_label(label)}/{canonicalize_name(name.distribution)}/")
        for page in pages:
            with urllib.request.urlopen(page, timeout=10) as response:
                assert quote(wheel.name) in response.read().decode(), page


def test_upload_without_or_with_wrong_credentials_is_refused(
    pypiserver: str, tmp_path: Path, installer_env: dict[str, str]
) -> None:
    wheel = standin.write_standin(tmp_path, torch="2.14", distribution="img2gray-refused")
    assert _twine_upload(pypiserver, [wheel], installer_env).returncode != 0
    wrong = _twine_upload(pypiserver, [wheel], installer_env, "-u", USER, "-p", "wrong")
    assert wrong.returncode != 0 and "403" in wrong.stdout + wrong.stderr
    # The server itself refuses an upload that carries no credentials at all (not only twine's prompt).
    request = urllib.request.Request(pypiserver + "/", data=b"", method="POST",
                                     headers={"Content-Type": "multipart/form-data; boundary=x"})  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code in (401, 403)
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(pypiserver + "/simple/img2gray-refused/", timeout=10)
    assert missing.value.code == 404


def test_upload_with_credentials_lists_every_wheel(uploaded: str, wheels: dict[str, list[Path]]) -> None:
    with urllib.request.urlopen(f"{uploaded}/simple/{PROJECT}/", timeout=10) as response:
        page = response.read().decode()
    for wheel in wheels["target"] + wheels["decoys"]:
        assert wheel.name in page


def test_pip_install_by_name_from_pypiserver_keeps_torch(
    uploaded: str, pip_venv: Path, wheels: dict[str, list[Path]], installer_env: dict[str, str], uv: str
) -> None:
    before = _uninstalled(pip_venv, uv, installer_env)
    plan = plan_install(f"{uploaded}/simple/", PROJECT, Environment.probe(str(pip_venv)), installer="pip",
                        extra_index_urls=[PYPI])  # fmt: skip
    assert plan.wheel.filename == wheels["target"][0].name
    assert plan.torch_pin == f"torch=={suite_torch()}"
    _run(plan.argv, env=installer_env)
    _assert_installed_and_runs(pip_venv, wheels["target"][0], before)


def test_uv_install_by_name_from_static_torch_index_keeps_torch(
    static_index: str, uv_venv: Path, wheels: dict[str, list[Path]], installer_env: dict[str, str], uv: str
) -> None:
    before = _uninstalled(uv_venv, uv, installer_env)
    plan = plan_install(f"{static_index}/simple/", PROJECT, Environment.probe(str(uv_venv)), installer="uv",
                        extra_index_urls=[PYPI])  # fmt: skip
    assert plan.index_url == f"{static_index}/simple/torch2.14/"
    _run([uv, *plan.argv[1:]], env=installer_env)
    _assert_installed_and_runs(uv_venv, wheels["target"][0], before)


def test_pip_install_by_name_from_static_torch_index_keeps_torch(
    static_index: str, pip_venv: Path, wheels: dict[str, list[Path]], installer_env: dict[str, str], uv: str
) -> None:
    """The README's pip command, typed by hand: sub-index + PyPI as extra index + the torch pin."""
    before = _uninstalled(pip_venv, uv, installer_env)
    _run([str(pip_venv), "-m", "pip", "install", "--index-url", f"{static_index}/simple/torch2.14/",
          "--extra-index-url", PYPI, PROJECT, f"torch=={suite_torch()}"], env=installer_env)  # fmt: skip
    _assert_installed_and_runs(pip_venv, wheels["target"][0], before)


def test_uv_project_config_with_an_explicit_index_keeps_torch(
    static_index: str, uv_venv: Path, wheels: dict[str, list[Path]], installer_env: dict[str, str], uv: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    """The README's pyproject.toml: ``[[tool.uv.index]]`` with ``explicit = true`` and a ``[tool.uv.sources]`` pin."""
    before = _uninstalled(uv_venv, uv, installer_env)
    (tmp_path / "pyproject.toml").write_text(
        f"""[project]
name = "my-app"
version = "0.1.0"
requires-python = ">=3.10"
dependencies = ["{PROJECT}", "torch=={suite_torch()}"]

[tool.uv.sources]
{PROJECT} = {{ index = "img2gray" }}

[[tool.uv.index]]
name = "img2gray"
url = "{static_index}/simple/torch2.14/"
explicit = true
"""
    )
    env = {k: v for k, v in installer_env.items() if k != "UV_NO_CONFIG"}
    _run([uv, "pip", "install", "--python", str(uv_venv), "-r", "pyproject.toml"], env=env, cwd=tmp_path)
    _assert_installed_and_runs(uv_venv, wheels["target"][0], before)


def test_missing_torch_combination_is_a_clear_error_not_a_torch_reinstall(
    static_index: str, pip_venv: Path, uv_venv: Path, installer_env: dict[str, str], uv: str
) -> None:
    decoys = f"{static_index}/decoys/simple/"  # builds for torch 2.13 and 2.15 only
    before = {python: _uninstalled(python, uv, installer_env) for python in (pip_venv, uv_venv)}

    with pytest.raises(NoCompatibleWheel) as caught:
        plan_install(decoys, PROJECT, Environment.probe(str(pip_venv)), extra_index_urls=[PYPI])
    assert f"{PROJECT} has no wheel for torch {suite_torch()}" in str(caught.value)
    assert "this index has builds for torch 2.13, 2.15" in str(caught.value)

    # Typed by hand with the documented pin, both installers refuse instead of replacing torch.
    pip = _run([str(pip_venv), "-m", "pip", "install", "--index-url", decoys, "--extra-index-url", PYPI,
                PROJECT, f"torch=={suite_torch()}"], env=installer_env, check=False)  # fmt: skip
    assert pip.returncode != 0
    assert "ResolutionImpossible" in pip.stderr and f"The user requested torch=={suite_torch()}" in pip.stdout + pip.stderr
    uvr = _run([uv, "pip", "install", "--python", str(uv_venv), "--index-url", decoys, "--extra-index-url", PYPI,
                PROJECT, f"torch=={suite_torch()}"], env=installer_env, check=False)  # fmt: skip
    assert uvr.returncode != 0 and "No solution found" in uvr.stderr
    # Through the per-torch sub-index the combination does not exist at all.
    sub = _run([str(pip_venv), "-m", "pip", "install", "--index-url", f"{static_index}/decoys/simple/torch2.14/",
                PROJECT, f"torch=={suite_torch()}"], env=installer_env, check=False)  # fmt: skip
    assert sub.returncode != 0 and f"No matching distribution found for {PROJECT}" in sub.stderr
    for python, state in before.items():
        assert torch_state(python) == state


def test_control_without_the_pin_pip_would_replace_torch(
    static_index: str, pip_venv: Path, installer_env: dict[str, str], tmp_path: Path
) -> None:
    """Why the mechanism exists: the flat page + PyPI, unpinned, resolves to 0.2.0+torch2.13 and a new torch."""
    report = tmp_path / "report.json"
    result = _run([str(pip_venv), "-m", "pip", "install", "--dry-run", "--quiet", "--report", str(report),
                   "--index-url", f"{static_index}/simple/", "--extra-index-url", PYPI, PROJECT],
                  env=installer_env, check=False)  # fmt: skip
    if result.returncode != 0 or "torch" not in report.read_text():
        pytest.skip(f"PyPI not reachable or has no other torch for this Python: {result.stderr[-300:]}")
    chosen = {i["metadata"]["name"]: i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}
    assert chosen[PROJECT] == "0.2.0+torch2.13"
    assert not chosen["torch"].startswith(suite_torch())


@pytest.fixture(scope="module")
def private_pypiserver(tmp_path_factory: pytest.TempPathFactory, wheels: dict[str, list[Path]]) -> Iterator[str]:
    """pypiserver that asks for USER/PASSWORD before it lists or serves anything, holding the target and the decoys."""
    folder = tmp_path_factory.mktemp("private-pypiserver")
    (folder / "packages").mkdir()
    for wheel in wheels["target"] + wheels["decoys"]:
        shutil.copy2(wheel, folder / "packages" / wheel.name)
    with run_pypiserver(folder, authenticate="list,download,update") as url:
        yield url


_LOGGING_WRAPPER = """#!/bin/sh
printf '%s\\n' "$0 $*" >> {log}
exec {real} "$@"
"""


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_install_command_run_keeps_the_password_off_the_installers_command_line(
    installer: str, private_pypiserver: str, pip_venv: Path, uv_venv: Path, wheels: dict[str, list[Path]],
    installer_env: dict[str, str], uv: str, tmp_path: Path,
) -> None:
    """`install_command --run` from a private index: any local user can read a process's command line (ps), so the
    password reaches pip/uv in their environment. Every installer process is started through a wrapper that logs its
    command line and then execs the real one; the install must succeed and torch stay as it was."""
    python = pip_venv if installer == "pip" else uv_venv
    before = _uninstalled(python, uv, installer_env)
    log, wrappers = tmp_path / "command-lines.log", tmp_path / "bin"
    wrappers.mkdir()
    for name, real in (("python", python), ("uv", Path(uv))):
        (wrappers / name).write_text(_LOGGING_WRAPPER.format(log=log, real=real))
        (wrappers / name).chmod(0o755)
    env = {**installer_env, "PATH": f"{wrappers}{os.pathsep}{os.environ['PATH']}", "KERNELWHEEL_INDEX_PASSWORD": PASSWORD}
    index = f"http://{USER}@{private_pypiserver.removeprefix('http://')}/simple/"
    result = _run([sys.executable, "-m", "tools.cli.install_command", PROJECT, "--index-url", index,
                   "--python", str(wrappers / "python"), "--installer", installer, "--run"],
                  env=env, cwd=REPO_ROOT, check=False)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    command_lines = log.read_text()
    assert ("uv pip install" if installer == "uv" else "-m pip install") in command_lines, command_lines
    assert PASSWORD not in command_lines and quote(PASSWORD, safe="") not in command_lines, command_lines
    _assert_installed_and_runs(python, wheels["target"][0], before)
