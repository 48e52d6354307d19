"""``python -m tools.cli.upload`` and pypiserver as docs/private-index.md runs it, on loopback, with real twine and pip.

pypiserver stores whatever it is sent under a wheel's name, and by default sends every unknown project to
pypi.org (a dependency-confusion path for a private index). The documented ``--disable-fallback`` and the
validation before ``twine upload`` close both; each test has a control showing the hazard without them.
"""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from tests.helpers import standin_wheels as standin
from tests.helpers.pypiserver import PASSWORD, USER, pypiserver
from tests.helpers.repo import REPO_ROOT

JUNK = "junk-1.0-py3-none-any.whl"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with pypiserver(tmp_path_factory.mktemp("pypiserver")) as url:
        yield url


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "TWINE_"))}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


def _get(url: str) -> tuple[int, str | None]:
    """Status and Location of one GET, redirects not followed."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.netloc, timeout=10)
    try:
        connection.request("GET", parts.path)
        response = connection.getresponse()
        return response.status, response.getheader("Location")
    finally:
        connection.close()


def _upload(server: str, *wheels: Path, password: str = PASSWORD) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.cli.upload", "--repository-url", server + "/", "-u", USER, *map(str, wheels)],
        capture_output=True, text=True, cwd=REPO_ROOT, env=_env(TWINE_PASSWORD=password), timeout=120,
    )  # fmt: skip


def _raw_twine(server: str, wheel: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "twine", "upload", "--non-interactive", "--disable-progress-bar", "--repository-url",
         server + "/", "-u", USER, "-p", PASSWORD, str(wheel)],
        capture_output=True, text=True, env=_env(), timeout=120,
    )  # fmt: skip


def test_with_disable_fallback_an_unknown_project_is_a_404_not_a_redirect_to_pypi(server: str, tmp_path: Path) -> None:
    assert _get(f"{server}/simple/img2gray-cu130-not-here/") == (404, None)
    # pip asked for a name the private index does not have finds nothing, instead of following pypiserver to PyPI.
    result = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(tmp_path), "--index-url", f"{server}/simple/",
         "img2gray-cu130-not-here"], capture_output=True, text=True, env=_env(), timeout=120,
    )  # fmt: skip
    assert result.returncode != 0 and "No matching distribution found for img2gray-cu130-not-here" in result.stderr
    assert "pypi.org" not in result.stdout + result.stderr


def test_control_without_disable_fallback_pypiserver_redirects_unknown_projects_to_pypi(tmp_path: Path) -> None:
    with pypiserver(tmp_path / "default", disable_fallback=False) as default:
        assert _get(f"{default}/simple/img2gray-cu130-not-here/") == (
            303, "https://pypi.org/simple/img2gray-cu130-not-here/")


def _junk(folder: Path, kind: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / JUNK
    if kind == "random bytes":
        path.write_bytes(os.urandom(4096))
    elif kind == "zip without METADATA":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("junk/__init__.py", "")
    else:  # a real wheel of another project, renamed
        real = standin.write_standin(folder / "real", torch="2.14", distribution="other")
        path.write_bytes(real.read_bytes())
    return path


@pytest.mark.parametrize(
    ("kind", "problem"),
    [
        ("random bytes", f"{JUNK}: not a readable wheel (zip archive): zipfile.BadZipFile: File is not a zip file"),
        ("zip without METADATA", "cannot be read as a wheel: Missing junk-1.0.dist-info/RECORD file"),
        ("another wheel renamed", "cannot be read as a wheel: Missing junk-1.0.dist-info/RECORD file"),
    ],
)
def test_an_invalid_wheel_is_refused_before_upload_and_nothing_is_sent(
    server: str, tmp_path: Path, kind: str, problem: str
) -> None:
    good = standin.write_standin(tmp_path / "good", torch="2.14", distribution="img2gray-upload-check")
    junk = _junk(tmp_path / "junk", kind)
    result = _upload(server, good, junk)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == ["error: refusing to upload, nothing was sent:"]
    assert problem in result.stderr
    # Not even the good wheel went: one bad file stops the batch before twine runs.
    assert _get(f"{server}/simple/img2gray-upload-check/")[0] == 404
    assert _get(f"{server}/simple/junk/")[0] == 404


def test_control_pypiserver_stores_random_bytes_and_twine_sends_a_renamed_wheel(tmp_path: Path) -> None:
    with pypiserver(tmp_path / "control") as control:
        # Any client's upload of random bytes under a wheel's name (the upload API twine speaks, by requests).
        junk = _junk(tmp_path / "junk", "random bytes")
        response = requests.post(
            control + "/", auth=(USER, PASSWORD), timeout=30,
            data={":action": "file_upload", "name": "junk", "version": "1.0", "filetype": "bdist_wheel"},
            files={"content": (JUNK, junk.read_bytes(), "application/octet-stream")},
        )  # fmt: skip
        assert response.status_code == 200, response.text
        stored = tmp_path / "control" / "packages" / JUNK
        assert stored.read_bytes() == junk.read_bytes()
        # twine itself sends a real wheel of another project renamed to junk-1.0 (its METADATA says "other").
        stored.unlink()
        renamed = _junk(tmp_path / "renamed", "another wheel renamed")
        assert _raw_twine(control, renamed).returncode == 0
        assert stored.read_bytes() == renamed.read_bytes()


def test_valid_wheels_are_uploaded_and_pip_installs_them(server: str, tmp_path: Path) -> None:
    wheel = standin.write_standin(tmp_path / "house", torch="2.14", distribution="img2gray-uploaded")
    result = _upload(server, wheel)
    assert result.returncode == 0, result.stdout + result.stderr
    assert PASSWORD not in result.stdout + result.stderr
    assert "* Uploaded 1 wheels to" in result.stderr
    download = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(tmp_path / "got"), "--index-url",
         f"{server}/simple/", "img2gray-uploaded"], capture_output=True, text=True, env=_env(), timeout=120,
    )  # fmt: skip
    assert download.returncode == 0, download.stderr
    assert (tmp_path / "got" / wheel.name).read_bytes() == wheel.read_bytes()


def test_a_wrong_password_is_a_failed_upload_and_the_password_is_not_echoed(server: str, tmp_path: Path) -> None:
    wheel = standin.write_standin(tmp_path, torch="2.14", distribution="img2gray-refused-upload")
    result = _upload(server, wheel, password="wrong-secret")
    assert result.returncode == 1
    assert f"error: twine upload to {server}/ failed (exit 1); its output above says why" in result.stderr
    assert "wrong-secret" not in result.stdout + result.stderr


def test_credentials_in_the_repository_url_are_refused(tmp_path: Path) -> None:
    wheel = standin.write_standin(tmp_path, torch="2.14")
    result = subprocess.run(
        [sys.executable, "-m", "tools.cli.upload", "--repository-url", "http://u:secret@127.0.0.1:9/", str(wheel)],
        capture_output=True, text=True, cwd=REPO_ROOT, env=_env(), timeout=60,
    )  # fmt: skip
    assert result.returncode == 1 and "secret" not in result.stderr
    assert "error: repository URL http://u:***@127.0.0.1:9/ carries credentials" in result.stderr


@pytest.mark.parametrize(("url", "problem"), [
    ("file:///srv/simple/", "its scheme is file: (usable here: http:, https:)"),
    ("http://[::1/", "it cannot be parsed (Invalid IPv6 URL)"),
])
def test_an_unusable_repository_url_names_the_upload_url_form(url: str, problem: str, tmp_path: Path) -> None:
    wheel = standin.write_standin(tmp_path, torch="2.14")
    result = subprocess.run(
        [sys.executable, "-m", "tools.cli.upload", "--repository-url", url, str(wheel)],
        capture_output=True, text=True, cwd=REPO_ROOT, env=_env(), timeout=60,
    )  # fmt: skip
    assert result.returncode == 1 and result.stdout == "", result
    assert result.stderr.splitlines() == [
        f"error: repository URL {url} is not usable: {problem}; expected the index's upload URL, "
        "http(s)://host[:port]/ (pypiserver) or .../legacy/ (PyPI, devpi)"]


def test_check_only_validates_without_uploading(tmp_path: Path) -> None:
    wheel = standin.write_standin(tmp_path, torch="2.14")
    ok = subprocess.run([sys.executable, "-m", "tools.cli.upload", "--check-only", str(wheel)],
                        capture_output=True, text=True, cwd=REPO_ROOT, env=_env(), timeout=60)  # fmt: skip
    assert ok.returncode == 0 and "* 1 wheels are valid; nothing was uploaded (--check-only)" in ok.stderr
    junk = _junk(tmp_path / "junk", "random bytes")
    bad = subprocess.run([sys.executable, "-m", "tools.cli.upload", "--check-only", str(wheel), str(junk)],
                         capture_output=True, text=True, cwd=REPO_ROOT, env=_env(), timeout=60)  # fmt: skip
    assert bad.returncode == 1 and "Traceback" not in bad.stderr and JUNK in bad.stderr


def test_no_password_and_no_terminal_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    wheel = standin.write_standin(tmp_path, torch="2.13")
    result = subprocess.run(
        [sys.executable, "-m", "tools.cli.upload", "--repository-url", "http://127.0.0.1:9/", "-u", USER, str(wheel)],
        capture_output=True, text=True, cwd=REPO_ROOT, env=_env(), stdin=subprocess.DEVNULL, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "EOFError" not in result.stderr
    assert result.stderr.strip().splitlines() == [
        "error: no password for the upload and no terminal to prompt on: set TWINE_PASSWORD in the environment "
        "(or pass --non-interactive to use a keyring)"]
