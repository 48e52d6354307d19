"""pypiserver on loopback, started as the private-index docs say (``--disable-fallback``), for upload/index tests.

The htpasswd line uses the ``{SHA}`` scheme so that the test process needs no passlib (whose import warns on
Python 3.11+); pypiserver checks it with passlib. Real deployments use ``htpasswd -B`` (bcrypt).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.helpers.servers import free_port, serving

USER, PASSWORD = "uploader", "correct horse battery staple"


@contextlib.contextmanager
def pypiserver(folder: Path, *, disable_fallback: bool = True, authenticate: str = "update") -> Iterator[str]:
    """``pypi-server run`` on 127.0.0.1 serving ``folder/packages``: anyone may read, only USER/PASSWORD may upload
    (``authenticate="list,download,update"``: only USER/PASSWORD may read too, a private index).
    Yields the server's root URL (``http://127.0.0.1:<port>``)."""
    folder.mkdir(parents=True, exist_ok=True)
    digest = base64.b64encode(hashlib.sha1(PASSWORD.encode()).digest()).decode()
    (folder / "htpasswd").write_text(f"{USER}:{{SHA}}{digest}\n")
    packages = folder / "packages"
    packages.mkdir(exist_ok=True)
    port = free_port()
    fallback = ["--disable-fallback"] if disable_fallback else []
    argv = [sys.executable, "-m", "pypiserver", "run", "-i", "127.0.0.1", "-p", str(port),
            "-P", str(folder / "htpasswd"), "-a", authenticate, *fallback, str(packages)]  # fmt: skip
    # A private index answers 401 until asked with the password: any HTTP answer means it is up.
    with serving(argv, f"http://127.0.0.1:{port}/simple/", log=folder / "server.log", any_status=authenticate != "update"):
        yield f"http://127.0.0.1:{port}"
