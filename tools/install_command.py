"""The install command that cannot change torch: pick the wheel for the installed torch, or say why none fits.

Several torch builds of one distribution (``img2gray-cu130 0.1.0+torch2.13``, ``0.1.0+torch2.14``, …)
share a project page. Asked for ``img2gray-cu130`` alone, pip and uv take the highest version and then
install whatever torch it requires, from PyPI if that is an extra index: a newer ``0.2.0+torch2.13``
downgrades a working torch 2.14. This module:

1. probes the target interpreter for its installed torch (``importlib.metadata``, torch is not imported)
   and the wheel tags it accepts;
2. reads the project page of the index (PEP 503 HTML; the torch requirement of each wheel comes from its
   PEP 658 ``.metadata``, else its ``+torchX.Y`` label, else the wheel's own METADATA);
3. keeps the wheels that fit, with a reason for every one it rejects, and raises ``NoCompatibleWheel``
   when none is left, before any installer runs;
4. prints ``pip install --index-url <index>/torchX.Y/ img2gray-cu130 torch==<installed>`` (or the ``uv pip``
   form): the per-torch sub-index when the index has one (``tools.index`` writes them), and always the
   installed torch pinned exactly, so that the resolver can only keep torch or fail.

``python -m tools.install_command --index-url http://127.0.0.1:8080/simple/ img2gray-cu130 [--run]``
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import shlex
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Literal
from urllib.error import HTTPError, URLError
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit
from urllib.request import Request, urlopen

import packaging
from packaging.metadata import parse_email
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from tools.errors import IndexUnreachable, InvalidWheelName, NoCompatibleWheel, ToolError, TorchNotInstalled
from tools.index import torch_requirement_from
from tools.wheelname import WheelName, labelled_torch, torch_label, torch_minor

Installer = Literal["pip", "uv"]
_TIMEOUT_S = 30

# Runs inside the target interpreter: torch's version is read before anything is added to sys.path.
_PROBE = """
import importlib.metadata, json, platform, sys
try:
    torch = importlib.metadata.version("torch")
except importlib.metadata.PackageNotFoundError:
    torch = None
sys.path.append(sys.argv[1])
from packaging import tags
print(json.dumps({"torch": torch, "python": platform.python_version(),
                  "tags": [str(t) for t in tags.sys_tags()]}))
"""


@dataclass(frozen=True)
class Target:
    """The environment a wheel is for: its interpreter, installed torch and accepted wheel tags."""

    python: str
    python_version: Version
    torch: Version | None
    tags: frozenset[str]

    def describe(self) -> str:
        torch = f"torch {self.torch}" if self.torch is not None else "no torch"
        return f"{torch} on Python {self.python_version}"

    @classmethod
    def probe(cls, python: str) -> Target:
        """Ask ``python`` (a path) for its torch version and tags, without importing torch."""
        packaging_root = str(Path(packaging.__file__).resolve().parent.parent)
        try:
            result = subprocess.run(
                [python, "-c", _PROBE, packaging_root], capture_output=True, text=True, check=True, timeout=120
            )
            facts = json.loads(result.stdout)
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            raise ToolError(f"cannot inspect the Python environment {python!r}: {exc}") from None
        torch = Version(facts["torch"]) if facts["torch"] else None
        return cls(python, Version(facts["python"]), torch, frozenset(facts["tags"]))


@dataclass(frozen=True)
class Candidate:
    """One wheel link of a project page."""

    filename: str
    url: str
    metadata_url: str | None  # PEP 658 / 714

    @property
    def name(self) -> WheelName:
        return WheelName.parse(self.filename)


@dataclass(frozen=True)
class Rejected:
    candidate: Candidate
    reason: str


class _LinkParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.links.append(dict(attrs))


def _request(url: str) -> Request:
    """A request for ``url``; ``user:password@`` in the URL becomes a Basic Authorization header."""
    parts = urlsplit(url)
    if parts.scheme == "file" and parts.path.endswith("/"):
        parts = parts._replace(path=parts.path + "index.html")  # a static tree read straight from disk
    headers = {"Accept": "text/html"}
    if parts.username is not None:
        credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(credentials).decode()
        parts = parts._replace(netloc=parts.netloc.rsplit("@", 1)[1])
    return Request(urlunsplit(parts), headers=headers)


def fetch(url: str) -> bytes | None:
    """The body at ``url``; None for 404 (no such project/sub-index); IndexUnreachable for anything else."""
    try:
        with urlopen(_request(url), timeout=_TIMEOUT_S) as response:
            return bytes(response.read())
    except HTTPError as exc:
        if exc.code == 404:
            return None
        raise IndexUnreachable(f"{_redact(url)}: HTTP {exc.code} {exc.reason}") from None
    except (URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, FileNotFoundError) or isinstance(exc, FileNotFoundError):
            return None  # file:// index without that page
        raise IndexUnreachable(f"{_redact(url)}: {reason}; is the index URL right and the server running?") from None


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{parts.netloc.rsplit('@', 1)[1]}"))


def project_url(index_url: str, project: str) -> str:
    return index_url.rstrip("/") + f"/{canonicalize_name(project)}/"


def list_candidates(index_url: str, project: str) -> list[Candidate] | None:
    """Every wheel on the project's page; None when the index has no page for the project."""
    page_url = project_url(index_url, project)
    body = fetch(page_url)
    if body is None:
        return None
    parser = _LinkParser()
    parser.feed(body.decode("utf-8", "replace"))
    candidates = []
    for link in parser.links:
        href = link.get("href")
        if not href:
            continue
        url = urljoin(page_url, href)
        filename = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
        if not filename.endswith(".whl"):
            continue
        try:
            WheelName.parse(filename)
        except InvalidWheelName:
            continue  # not a wheel this tool can reason about; the installer will ignore it too
        has_metadata = link.get("data-core-metadata") or link.get("data-dist-info-metadata")
        metadata_url = url.split("#", 1)[0] + ".metadata" if has_metadata and has_metadata != "false" else None
        candidates.append(Candidate(filename, url.split("#", 1)[0], metadata_url))
    return candidates


def torch_requirement_of(candidate: Candidate) -> SpecifierSet | None:
    """The wheel's ``Requires-Dist: torch`` specifier: from PEP 658 metadata, else the label, else the wheel."""
    metadata: bytes | None = None
    if candidate.metadata_url is not None:
        metadata = fetch(candidate.metadata_url)
    if metadata is None:
        label = labelled_torch(candidate.name.version)
        if label is not None:
            return SpecifierSet(f"=={label}.*")
        wheel = fetch(candidate.url)
        if wheel is None:
            raise IndexUnreachable(f"{candidate.url}: listed on the index but not downloadable (404)")
        with zipfile.ZipFile(io.BytesIO(wheel)) as archive:
            name = next(n for n in archive.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA"))
            metadata = archive.read(name)
    raw, _ = parse_email(metadata)
    return torch_requirement_from(raw.get("requires_dist", []), candidate.filename)


def select(
    candidates: Sequence[Candidate], target: Target, torch_of: Mapping[str, SpecifierSet | None]
) -> tuple[list[Candidate], list[Rejected]]:
    """Split ``candidates`` into those that fit ``target`` and those that don't, each with its reason (pure)."""
    accepted: list[Candidate] = []
    rejected: list[Rejected] = []
    for candidate in candidates:
        name = candidate.name
        torch = torch_of.get(candidate.filename)
        if not {str(t) for t in name.tags} & target.tags:
            rejected.append(Rejected(candidate, f"tag {name.tag} is not accepted by Python {target.python_version}"))
        elif torch is not None and target.torch is None:
            rejected.append(Rejected(candidate, f"needs torch{torch}, and the target has no torch installed"))
        elif torch is not None and target.torch is not None and not torch.contains(target.torch, prereleases=True):
            rejected.append(Rejected(candidate, f"needs torch{torch}, not {target.torch}"))
        else:
            accepted.append(candidate)
    accepted.sort(key=lambda c: c.name.version, reverse=True)
    return accepted, rejected


def _available_torch(rejected: Sequence[Rejected], torch_of: Mapping[str, SpecifierSet | None]) -> list[str]:
    minors: set[Version] = set()
    for item in rejected:
        spec = torch_of.get(item.candidate.filename)
        for clause in spec or ():
            try:
                minors.add(torch_minor(clause.version.removesuffix(".*")))
            except ToolError:
                continue
    return [str(m) for m in sorted(minors)]


@dataclass(frozen=True)
class Plan:
    """What will be installed, from where, and the exact argv that does it."""

    project: str
    wheel: Candidate
    index_url: str
    torch_pin: str | None
    argv: list[str]
    rejected: list[Rejected]


def plan_install(
    index_url: str,
    project: str,
    target: Target,
    *,
    installer: Installer = "pip",
    extra_index_urls: Sequence[str] = (),
) -> Plan:
    """Choose the wheel for ``target`` and the command that installs it without touching torch."""
    candidates = list_candidates(index_url, project)
    if candidates is None:
        raise NoCompatibleWheel(
            canonicalize_name(project),
            _redact(index_url),
            target.describe(),
            [],
            "the index has no page for this project; check the name (e.g. img2gray-cu130 for CUDA 13.0) "
            "and that the URL ends in /simple/",
        )
    torch_of = {c.filename: torch_requirement_of(c) for c in candidates}
    accepted, rejected = select(candidates, target, torch_of)
    if not accepted:
        available = _available_torch(rejected, torch_of)
        have = f"builds for torch {', '.join(available)}" if available else "no torch-specific builds"
        hint = (
            f"this index has {have}; install one of those torch versions first, or build {project} for "
            f"{'torch ' + str(torch_minor(target.torch)) if target.torch else 'your torch'} and add it to the index. "
            "Nothing was installed and torch was not touched."
        )
        reasons = [f"{r.candidate.filename}: {r.reason}" for r in rejected] or ["(the project page lists no wheels)"]
        raise NoCompatibleWheel(canonicalize_name(project), _redact(index_url), target.describe(), reasons, hint)
    best = accepted[0]
    url = index_url
    if target.torch is not None:
        sub = index_url.rstrip("/") + f"/{torch_label(torch_minor(target.torch))}/"
        sub_candidates = list_candidates(sub, project)
        if sub_candidates and best.filename in {c.filename for c in sub_candidates}:
            url = sub
    pin = f"torch=={target.torch}" if target.torch is not None else None
    requirements = [canonicalize_name(project)] + ([pin] if pin else [])
    extra = [arg for u in extra_index_urls for arg in ("--extra-index-url", u)]
    if installer == "pip":
        argv = [target.python, "-m", "pip", "install", "--index-url", url, *extra, *requirements]
    else:
        argv = ["uv", "pip", "install", "--python", target.python, "--index-url", url, *extra, *requirements]
    return Plan(canonicalize_name(project), best, url, pin, argv, rejected)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.install_command",
        description="Print (or run) the pip/uv command that installs a project's wheel for the torch already "
        "installed, with torch pinned so the installer cannot change it.",
    )
    parser.add_argument("project", help="distribution name, e.g. img2gray-cu130")
    parser.add_argument("--index-url", required=True, help="the index root, e.g. http://127.0.0.1:8080/simple/")
    parser.add_argument("--extra-index-url", action="append", default=[], help="passed through (repeatable)")
    parser.add_argument("--python", default=sys.executable, help="interpreter of the target environment")
    parser.add_argument("--installer", choices=["pip", "uv"], default="pip")
    parser.add_argument("--torch", type=Version, help="plan for this torch version instead of the installed one")
    parser.add_argument("--run", action="store_true", help="run the command, then check torch is unchanged")
    parser.add_argument("--json", action="store_true", help="print a JSON plan instead of a shell command")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        target = Target.probe(args.python)
        if args.torch is not None:
            target = Target(target.python, target.python_version, args.torch, target.tags)
        if target.torch is None:
            raise TorchNotInstalled(
                f"{args.python} has no torch installed, so no build can be matched to it; install torch first "
                "(e.g. pip install torch==2.14.1) or pass --torch X.Y.Z"
            )
        print(f"* {target.describe()} ({args.python})", file=sys.stderr)
        plan = plan_install(
            args.index_url, args.project, target, installer=args.installer, extra_index_urls=args.extra_index_url
        )
    except ToolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for item in plan.rejected:
        print(f"  skipped {item.candidate.filename}: {item.reason}", file=sys.stderr)
    print(f"* {plan.project}: {plan.wheel.filename} from {_redact(plan.index_url)}", file=sys.stderr)
    if args.json:
        print(json.dumps({"version": 1, "wheel": plan.wheel.filename, "index_url": plan.index_url,
                          "torch_pin": plan.torch_pin, "argv": plan.argv}, indent=2))
    else:
        print(shlex.join(plan.argv))
    if not args.run:
        return 0
    command = list(plan.argv)
    if command[0] == "uv":
        command[0] = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    returncode = subprocess.run(command).returncode
    after = Target.probe(args.python).torch
    if after != target.torch:
        print(f"error: torch changed from {target.torch} to {after}; this is a bug in the pin", file=sys.stderr)
        return 1
    return returncode


if __name__ == "__main__":
    raise SystemExit(main())
