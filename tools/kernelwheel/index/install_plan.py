"""The install command that cannot change torch: pick the wheel for the installed torch, or say why none fits.

Several torch builds of one distribution (``img2gray-cu130 0.1.0+torch2.13``, ``0.1.0+torch2.14``, …)
share a project page. Asked for ``img2gray-cu130`` alone, pip and uv take the highest version and then
install whatever torch it requires, from PyPI if that is an extra index: a newer ``0.2.0+torch2.13``
downgrades a working torch 2.14. This module:

1. probes the target interpreter for its installed torch (``importlib.metadata``, torch is not imported)
   and the wheel tags it accepts;
2. reads the project page of the index with pypi-simple (``kernelwheel.index.client``; PEP 503 HTML, or
   PEP 691 JSON over http); the torch requirement of each wheel comes from its PEP 658 ``.metadata``, checked
   against the page's ``data-core-metadata`` hash, else its ``+torchX.Y`` label, else the wheel's own METADATA;
3. keeps the wheels that fit, with a reason for every one it rejects, and raises ``NoCompatibleWheel``
   when none is left, before any installer runs;
4. prints ``pip install --index-url <index>/torchX.Y/ img2gray-cu130 torch==<installed>`` (or the ``uv pip``
   form): the per-torch sub-index when the index has one (``kernelwheel index`` writes them), and always the
   installed torch pinned exactly, so that the resolver can only keep torch or fail.

Reading the index has one deadline for all of its requests together (``plan_install(deadline_s=...)``): a server
that answers one byte at a time cannot hold the command past it. A password in an index URL is never printed: the
printed command says ``"${KERNELWHEEL_INDEX_PASSWORD}"`` in its place (``printable_argv``).

``kernelwheel install-command --index-url http://127.0.0.1:8080/simple/ img2gray-cu130 [--run]``
"""


from __future__ import annotations

import json
import re
import shlex
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeVar
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import packaging
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from kernelwheel.format.variants import Backend
from kernelwheel.index.client import Candidate, check_url, list_candidates, torch_requirement_of
from kernelwheel.io.errors import (
    IndexUnreachable,
    InvalidProjectName,
    InvalidVariantName,
    NoCompatibleWheel,
    ToolError,
)
from kernelwheel.io.urls import redact
from kernelwheel.wheels.naming import is_distribution_name, torch_label, torch_minor

Installer = Literal["pip", "uv"]
T = TypeVar("T")

# Seconds for reading the index, every request together (each one also has a 30 s limit between two reads).
DEFAULT_DEADLINE_S = 60.0
# The printed command names these variables instead of a password: the index URL's, then each extra index's.
PASSWORD_ENV = "KERNELWHEEL_INDEX_PASSWORD"
EXTRA_PASSWORD_ENV = "KERNELWHEEL_EXTRA_INDEX_PASSWORD_{}"
_VARIABLE = re.compile(r"\$\{(KERNELWHEEL_[A-Z0-9_]+)\}")


# Runs inside the target interpreter. torch's version, CUDA and ROCm come from torch's own version module
# (``torch/version.py``: ``__version__ = '2.14.1+cu130'``, ``cuda = '13.0'``), read as a file: importing torch would
# take seconds and fails in an environment whose CUDA libraries are missing. importlib.metadata has no ``+cu130``.
_PROBE = """
import importlib.util, json, platform, re, sys
spec = importlib.util.find_spec("torch")
torch = cuda = rocm = None
if spec is not None and spec.origin is not None:
    source = open(spec.origin.rsplit("/", 1)[0] + "/version.py", encoding="utf-8").read()
    def field(name):
        match = re.search(name + r"(?:: Optional\\[str\\])? = '([^']*)'", source)
        return match[1] if match else None
    torch, cuda = field("__version__"), field("cuda")
    rocm = field("rocm") or field("hip")  # kernels 0.19.1: torch.version.rocm (torch >= 2.10), else .hip
sys.path.append(sys.argv[1])
from packaging import markers, tags
import importlib.metadata
installed = sorted({d.metadata["Name"] for d in importlib.metadata.distributions() if d.metadata["Name"]})
print(json.dumps({"torch": torch, "cuda": cuda, "rocm": rocm, "python": platform.python_version(),
                  "tags": [str(t) for t in tags.sys_tags()], "installed": installed,
                  "markers": markers.default_environment()}))
"""


def cuda_compatible(build: Version, runtime: Version) -> bool:
    """kernels' rule: a torch built for CUDA X.Y runs builds for CUDA X.0 … X.Y (same major, minor ≤ Y). kernels
    0.19.1 gives ROCm the same rule (``variants._backend_mismatch``); 0.17.2 wanted ROCm's version exactly."""
    return build.major == runtime.major and build.minor <= runtime.minor


_TOOLKITS = {"cuda": "CUDA", "rocm": "ROCm"}  # the backends whose builds follow that rule


def rocm_version(text: str | None) -> Version | None:
    """``torch.version.rocm`` (or ``.hip``: ``"6.4.43482-0f2d60242"``) → ``Version("6.4")``, as kernels 0.19.1's
    ``backends._backend`` reads it (the part before ``-``; major.minor is what the rule compares)."""
    if not text:
        return None
    release = Version(text.split("-")[0]).release
    return Version(f"{release[0]}.{release[1] if len(release) > 1 else 0}")


@dataclass(frozen=True)
class Environment:
    """The environment a wheel is for: its interpreter, installed torch and accepted wheel tags."""

    python: str
    python_version: Version
    torch: Version | None
    tags: frozenset[str]
    cuda: Version | None = None  # torch.version.cuda; None for a CPU-only torch (or no torch)
    installed: frozenset[str] = frozenset()  # canonical names of the distributions already installed
    rocm: Version | None = None  # torch.version.rocm (else .hip) as major.minor; None for a torch without ROCm
    # ``tags`` in the order of packaging.tags.sys_tags() (most preferred first): which build pip takes among several.
    tag_order: tuple[str, ...] = ()
    # PEP 508 marker values of the interpreter (packaging.markers.default_environment()); empty when not probed.
    markers: Mapping[str, str] = field(default_factory=dict, hash=False)

    def describe(self) -> str:
        torch = f"torch {self.torch}" if self.torch is not None else "no torch"
        cuda = f" (CUDA {self.cuda})" if self.cuda is not None else f" (ROCm {self.rocm})" if self.rocm else ""
        return f"{torch}{cuda} on Python {self.python_version}"

    def toolkit(self, kind: str) -> Version | None:
        """The torch's CUDA or ROCm version (``kind``: ``cuda`` or ``rocm``)."""
        return self.cuda if kind == "cuda" else self.rocm if kind == "rocm" else None

    @classmethod
    def probe(cls, python: str, *, timeout_s: float = 120) -> Environment:
        """Ask ``python`` (a path) for its torch version and tags, without importing torch."""
        packaging_root = str(Path(packaging.__file__).resolve().parent.parent)
        where = f"cannot inspect the Python environment {python!r}"
        try:
            result = subprocess.run(
                [python, "-c", _PROBE, packaging_root], capture_output=True, text=True, timeout=timeout_s
            )
        except OSError as exc:
            raise ToolError(f"{where}: cannot run it ({exc.strerror or exc})") from None
        except subprocess.TimeoutExpired:
            raise ToolError(f"{where}: it did not answer within {timeout_s:g} s") from None
        if result.returncode != 0:
            said = result.stderr.strip().splitlines()[-1:]
            raise ToolError(f"{where}: it exited with {result.returncode}"
                            + (f" and said {said[0][:200]!r}" if said else ""))
        try:
            facts = json.loads(result.stdout)
        except ValueError:
            facts = None
        if not isinstance(facts, dict):
            raise ToolError(f"{where}: expected a Python interpreter (3.9 or newer) answering in JSON, it printed "
                            f"{result.stdout.strip()[:80]!r}")
        return cls._from_facts(python, facts, where)

    @classmethod
    def _from_facts(cls, python: str, facts: Mapping[str, object], where: str) -> Environment:
        """The probe's answer, every field checked: a broken torch (``__version__ = 'not a version'``) or an
        interpreter that is not what it claims is one clear error, never an ``InvalidVersion`` traceback."""
        tag_order = tuple(_strings(facts, "tags", where))
        python_version = _version_fact(facts, "python", where)
        if python_version is None:
            raise ToolError(f"{where}: it did not say its Python version; expected a Python interpreter (3.9 or newer)")
        rocm = _version_fact(facts, "rocm", where)
        markers = facts.get("markers") or {}
        if not isinstance(markers, dict) or not all(isinstance(v, str) for v in markers.values()):
            raise ToolError(f"{where}: its marker environment is {markers!r:.80}; expected an object of strings")
        return cls(python, python_version, _version_fact(facts, "torch", where), frozenset(tag_order),
                   _version_fact(facts, "cuda", where), frozenset(canonicalize_name(name) for name in
                   _strings(facts, "installed", where)), rocm_version(str(rocm)) if rocm else None, tag_order,
                   {str(k): v for k, v in markers.items()})


def _version_fact(facts: Mapping[str, object], key: str, where: str) -> Version | None:
    """``facts[key]`` as a PEP 440 version (the part before ``-`` for ROCm's ``6.4.43482-0f2d60242``); None when
    absent or empty."""
    value = facts.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ToolError(f"{where}: it gave its {key} version as {value!r:.80}; expected a version string such as "
                        "2.14.1")
    try:
        return Version(value.split("-")[0] if key == "rocm" else value)
    except InvalidVersion:
        shown = f"torch says __version__ = {value!r:.80}" if key == "torch" else f"its {key} version is {value!r:.80}"
        raise ToolError(f"{where}: {shown}, which is not a version; expected a PEP 440 version such as 2.14.1 "
                        f"(reinstall {key if key in ('torch', 'python') else 'torch'})") from None


def _strings(facts: Mapping[str, object], key: str, where: str) -> list[str]:
    value = facts.get(key)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ToolError(f"{where}: it gave {key} as {value!r:.80}; expected a list of strings")
    return value


def _project_backend(project: str) -> tuple[str, Backend] | None:
    """``img2gray-cu130`` → ``("img2gray", Backend(cuda, 13.0))``; None for a name without a backend suffix."""
    kernel, _, suffix = canonicalize_name(project).rpartition("-")
    try:
        return (kernel, Backend.parse(suffix)) if kernel else None
    except InvalidVariantName:
        return None


def check_backend(index_url: str, project: str, target: Environment) -> None:
    """Refuse a CUDA or ROCm build the target's torch cannot run, naming the project it should install instead (the
    newest ``<kernel>-cuXY`` / ``<kernel>-rocmXY`` on the index that kernels' rule allows, or ``<kernel>-cpu`` for a
    torch without that toolkit)."""
    parsed = _project_backend(project)
    if parsed is None or target.torch is None:
        return
    kernel, backend = parsed
    # Every backend's wheel installs the same package folder: a second one would overwrite the first's files.
    others = sorted(name for name in target.installed if name != canonicalize_name(project)
                    and (name == kernel or (_project_backend(name) or ("", None))[0] == kernel))
    if others:
        raise NoCompatibleWheel(
            canonicalize_name(project), redact(index_url), target.describe(),
            [f"{', '.join(others)} is already installed, and every {kernel} build installs the same package folder"],
            f"keep {others[0]}, or uninstall it first (pip uninstall {' '.join(others)}). Nothing was installed.")
    if backend.kind not in _TOOLKITS or backend.version is None:
        return
    name, runtime = _TOOLKITS[backend.kind], target.toolkit(backend.kind)
    if runtime is not None and cuda_compatible(backend.version, runtime):
        return
    if runtime is None:
        alternatives = [f"{kernel}-cpu"]
        why = f"{project} is built for {name} {backend.version}, and this torch has no {name}"
    else:
        alternatives = [f"{kernel}-{Backend(backend.kind, Version(f'{runtime.major}.{minor}')).tag}"
                        for minor in range(runtime.minor, -1, -1)]
        why = (f"{project} is built for {name} {backend.version}, which a torch for {name} {runtime} cannot load "
               f"(it runs {name} {runtime.major}.0 to {runtime} builds)")
    found = next((name for name in alternatives if list_candidates(index_url, name)), None)
    hint = (f"install {found} instead (same command, that project name)" if found else
            f"this index has none of {', '.join(alternatives)}; build {kernel} for your torch's {name}")
    raise NoCompatibleWheel(canonicalize_name(project), redact(index_url), target.describe(), [why],
                            hint + ". Nothing was installed and torch was not touched.")


@dataclass(frozen=True)
class WheelRejected:
    candidate: Candidate
    reason: str


def choose_wheels(
    candidates: Sequence[Candidate], target: Environment, torch_of: Mapping[str, SpecifierSet | None]
) -> tuple[list[Candidate], list[WheelRejected]]:
    """Split ``candidates`` into those that fit ``target`` and those that don't, each with its reason (pure)."""
    accepted: list[Candidate] = []
    rejected: list[WheelRejected] = []
    for candidate in candidates:
        name = candidate.name
        torch = torch_of.get(candidate.filename)
        if not {str(t) for t in name.tags} & target.tags:
            reason = f"tag {name.tag} is not accepted by Python {target.python_version}"
            rejected.append(WheelRejected(candidate, reason))
        elif torch is not None and target.torch is None:
            rejected.append(WheelRejected(candidate, f"needs torch{torch}, and the target has no torch installed"))
        elif torch is not None and target.torch is not None and not torch.contains(target.torch, prereleases=True):
            rejected.append(WheelRejected(candidate, f"needs torch{torch}, not {target.torch}"))
        else:
            accepted.append(candidate)
    rank = {tag: position for position, tag in enumerate(target.tag_order)}
    accepted.sort(key=lambda c: (c.name.version, -_tag_rank(c, rank)), reverse=True)
    return accepted, rejected


def _tag_rank(candidate: Candidate, rank: Mapping[str, int]) -> int:
    """Where the candidate's best tag comes in the target's ``sys_tags()`` order (0: most preferred). pip and uv
    order the builds of one version by it, so the plan names the file the installer will really take."""
    return min((rank.get(str(tag), len(rank)) for tag in candidate.name.tags), default=len(rank))


def _available_torch(rejected: Sequence[WheelRejected], torch_of: Mapping[str, SpecifierSet | None]) -> list[str]:
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
class InstallPlan:
    """What will be installed, from where, and the exact argv that does it."""

    project: str
    wheel: Candidate
    index_url: str
    torch_pin: str | None
    argv: list[str]
    rejected: list[WheelRejected]
    reason: str = ""  # why this wheel: the torch it admits, the CUDA rule it passed
    installer: Installer = "pip"


def call_with_deadline(work: Callable[[], T], seconds: float, what: str, shown_s: float | None = None) -> T:
    """``work()``, or ``IndexUnreachable`` once ``seconds`` have passed without it finishing (the message names
    ``shown_s``, the whole deadline, when the caller has spent part of it already).

    requests' timeouts bound each read, not a whole answer: a server sending a byte every few seconds never
    trips them. So the work runs in a daemon thread; past the deadline it is abandoned (it holds no files, and
    the process exit ends it) and the caller gets the error at once.
    """
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(work())
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=run, name="index-reader", daemon=True)
    worker.start()
    worker.join(max(seconds, 0.0))
    if worker.is_alive():
        limit = shown_s if shown_s is not None else seconds
        raise IndexUnreachable(
            f"{what}: no complete answer within {limit:g} s (the deadline for reading the index, --timeout); "
            "the server is too slow or is holding the connection open. Nothing was installed"
        )
    if failure:
        raise failure[0]
    return outcome[0]


def check_project_name(project: str) -> None:
    """Raise ``InvalidProjectName`` unless ``project`` is a distribution name (PEP 508, ASCII)."""
    if not is_distribution_name(project):
        raise InvalidProjectName(f"expected a distribution name such as img2gray-cu130 (no version, extras or "
                                 f"spaces: the wheel is chosen for the target's torch), got {project!r:.120}")


def plan_install(
    index_url: str,
    project: str,
    target: Environment,
    *,
    installer: Installer = "pip",
    extra_index_urls: Sequence[str] = (),
    deadline_s: float | None = DEFAULT_DEADLINE_S,
    deadline_shown_s: float | None = None,
) -> InstallPlan:
    """Choose the wheel for ``target`` and the command that installs it without touching torch.

    Raises ``NoCompatibleWheel`` when nothing fits, ``IndexUnreachable`` when the index cannot be read (or not
    within ``deadline_s`` for every request together; the message names ``deadline_shown_s`` when given),
    ``InvalidIndexUrl`` for a malformed URL, and another ``ToolError`` (``DigestMismatch``, ``InvalidWheel``, a
    refused ``file:`` link) when what it serves cannot be trusted; nothing is installed in any of these cases.
    """
    check_project_name(project)
    check_url(index_url)
    for extra in extra_index_urls:
        check_url(extra, what="extra index URL", schemes=("http", "https", "file"))

    def plan() -> InstallPlan:
        return _plan_install(index_url, project, target, installer, extra_index_urls)

    return plan() if deadline_s is None else call_with_deadline(plan, deadline_s, redact(index_url), deadline_shown_s)


def _plan_install(
    index_url: str, project: str, target: Environment, installer: Installer, extra_index_urls: Sequence[str]
) -> InstallPlan:
    candidates = list_candidates(index_url, project)
    if candidates is None:
        raise NoCompatibleWheel(
            canonicalize_name(project),
            redact(index_url),
            target.describe(),
            [],
            "the index has no page for this project; check the name (e.g. img2gray-cu130 for CUDA 13.0) "
            "and that the URL ends in /simple/",
        )
    check_backend(index_url, project, target)
    torch_of = {c.filename: torch_requirement_of(c, target.markers or None) for c in candidates}
    accepted, rejected = choose_wheels(candidates, target, torch_of)
    if not accepted:
        available = _available_torch(rejected, torch_of)
        have = f"builds for torch {', '.join(available)}" if available else "no torch-specific builds"
        hint = (
            f"this index has {have}; install one of those torch versions first, or build {project} for "
            f"{'torch ' + str(torch_minor(target.torch)) if target.torch else 'your torch'} and add it to the index. "
            "Nothing was installed and torch was not touched."
        )
        reasons = [f"{r.candidate.filename}: {r.reason}" for r in rejected] or ["(the project page lists no wheels)"]
        raise NoCompatibleWheel(canonicalize_name(project), redact(index_url), target.describe(), reasons, hint)
    best = accepted[0]
    url = index_url
    if target.torch is not None:
        sub = index_url.rstrip("/") + f"/{torch_label(torch_minor(target.torch))}/"
        sub_candidates = list_candidates(sub, project)
        if sub_candidates and best.filename in {c.filename for c in sub_candidates}:
            url = sub
    # The public version: "==2.14.1" matches the installed 2.14.1+cu130, and an index serving torch (PyPI) has no
    # "+cu130" build to offer for an exact local pin.
    pin = f"torch=={target.torch.public}" if target.torch is not None else None
    requirements = [canonicalize_name(project)] + ([pin] if pin else [])
    extra = [arg for u in extra_index_urls for arg in ("--extra-index-url", u)]
    if installer == "pip":
        argv = [target.python, "-m", "pip", "install", "--index-url", url, *extra, *requirements]
    else:
        argv = ["uv", "pip", "install", "--python", target.python, "--index-url", url, *extra, *requirements]
    return InstallPlan(canonicalize_name(project), best, url, pin, argv, rejected,
                       _reason(project, best, torch_of.get(best.filename), target), installer)


def _password_free(url: str, variable: str) -> str:
    """``url`` with its password replaced by the shell reference ``${variable}`` (unchanged without a password)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{quote(unquote(parts.username or ''), safe='')}:${{{variable}}}@{host}"))


def with_password(url: str, password: str | None) -> str:
    """``url`` with ``password`` put in, when it names a user and no password of its own (and ``password`` is set)."""
    if not password:
        return url
    try:
        parts = urlsplit(url)
        if parts.username is None or parts.password is not None:
            return url
    except ValueError:
        return url  # check_url reports it
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.netloc.rsplit('@', 1)[0]}:{quote(password, safe='')}@{host}"))


def printable_argv(plan: InstallPlan) -> tuple[list[str], list[str]]:
    """The plan's command with every password replaced by ``${KERNELWHEEL_INDEX_PASSWORD}`` (the index URL's) or
    ``${KERNELWHEEL_EXTRA_INDEX_PASSWORD_<n>}`` (the n-th extra index's), and the names of the variables it uses."""
    urls = {plan.index_url: PASSWORD_ENV}
    for number, extra in enumerate(_extra_index_urls(plan), start=1):
        urls.setdefault(extra, EXTRA_PASSWORD_ENV.format(number))
    argv = [_password_free(arg, urls[arg]) if arg in urls else arg for arg in plan.argv]
    variables = [urls[arg] for arg in plan.argv if arg in urls and _has_password(arg)]
    return argv, variables


def _extra_index_urls(plan: InstallPlan) -> list[str]:
    return [plan.argv[i + 1] for i, arg in enumerate(plan.argv) if arg == "--extra-index-url"]


# Where each installer reads the two index options from its environment (pip: whitespace-separated extras; uv: the
# same, as `uv pip install --help` documents).
_INDEX_ENV = {"pip": ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"), "uv": ("UV_INDEX_URL", "UV_EXTRA_INDEX_URL")}


def runnable_command(plan: InstallPlan) -> tuple[list[str], dict[str, str]]:
    """The plan's command as ``--run`` starts it, and the environment variables to add for it.

    A process's command line is readable by every local user (``ps``, ``/proc/<pid>/cmdline``), its environment only
    by the same user: an index URL that carries a password leaves the command line for the installer's own variable
    (``PIP_INDEX_URL``, ``UV_INDEX_URL``). The extra indexes move together when one of them has a password (the
    installer reads them from one variable); there they take the place of the extras in the caller's environment
    and, for pip, in its configuration files. Without passwords the command is the plan's own and nothing is added.
    """
    index_variable, extras_variable = _INDEX_ENV[plan.installer]
    extras = _extra_index_urls(plan)
    env: dict[str, str] = {}
    moved: set[str] = set()
    if _has_password(plan.index_url):
        env[index_variable] = plan.index_url
        moved.add("--index-url")
    if any(_has_password(url) for url in extras):
        env[extras_variable] = " ".join(extras)
        moved.add("--extra-index-url")
    command: list[str] = []
    words = iter(plan.argv)
    for word in words:
        if word in moved:
            next(words)  # the option's URL leaves with it
        else:
            command.append(word)
    return command, env


def _has_password(url: str) -> bool:
    try:
        return urlsplit(url).password is not None
    except ValueError:
        return False  # check_url refused it before any plan was made


def shell_command(argv: Sequence[str]) -> str:
    """``shlex.join``, except that ``${KERNELWHEEL_...}`` stays expandable (double-quoted, not single-quoted)."""
    words = []
    for arg in argv:
        pieces = _VARIABLE.split(arg)  # [text, variable, text, variable, ..., text]
        words.append("".join(
            (f'"${{{piece}}}"' if odd else shlex.quote(piece) if piece else "") for odd, piece in
            ((i % 2 == 1, piece) for i, piece in enumerate(pieces))
        ) or "''")
    return " ".join(words)


def _reason(project: str, wheel: Candidate, torch: SpecifierSet | None, target: Environment) -> str:
    parts = [f"the newest of {project}'s wheels that fits Python {target.python_version}, and of that version's "
             "builds the one whose tag this interpreter prefers (as pip and uv choose)"]
    if torch is not None:
        parts.append(f"its Requires-Dist torch{torch} admits the installed torch {target.torch}")
    parsed = _project_backend(project)
    runtime = target.toolkit(parsed[1].kind) if parsed is not None else None
    if parsed is not None and parsed[1].kind in _TOOLKITS and runtime is not None:
        name = _TOOLKITS[parsed[1].kind]
        # Only these two pass kernels' rule (``cuda_compatible``); "older minor" for 13.0 on 13.0 was wrong.
        relation = "same version" if parsed[1].version == runtime else "same major, older minor"
        parts.append(f"a {name} {parsed[1].version} build runs on torch's {name} {runtime} ({relation})")
    return "; ".join(parts)
