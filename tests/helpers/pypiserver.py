"""pypiserver on loopback, started as the private-index docs say (``--disable-fallback``), for upload/index tests.

The htpasswd line uses the ``{SHA}`` scheme so that the test process needs no passlib (whose import warns on
Python 3.11+); pypiserver checks it with passlib. Real deployments use ``htpasswd -B`` (bcrypt).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

USER, PASSWORD = "uploader", "correct horse battery staple"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(url: str, process: subprocess.Popen[bytes], seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server for {url} exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    raise RuntimeError(f"server for {url} did not answer within {seconds} s")


@contextlib.contextmanager
def pypiserver(folder: Path, *, disable_fallback: bool = True) -> Iterator[str]:
    """``pypi-server run`` on 127.0.0.1 serving ``folder/packages``: anyone may read, only USER/PASSWORD may upload.
    Yields the server's root URL (``http://127.0.0.1:<port>``)."""
    folder.mkdir(parents=True, exist_ok=True)
    digest = base64.b64encode(hashlib.sha1(PASSWORD.encode()).digest()).decode()
    (folder / "htpasswd").write_text(f"{USER}:{{SHA}}{digest}\n")
    packages = folder / "packages"
    packages.mkdir(exist_ok=True)
    port = free_port()
    fallback = ["--disable-fallback"] if disable_fallback else []
    with (folder / "server.log").open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "pypiserver", "run", "-i", "127.0.0.1", "-p", str(port),
             "-P", str(folder / "htpasswd"), "-a", "update", *fallback, str(packages)],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            wait_for(f"http://127.0.0.1:{port}/simple/", server)
            yield f"http://127.0.0.1:{port}"
        finally:
            server.terminate()
            server.wait(timeout=10)
