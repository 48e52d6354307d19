"""Reading a package index: a project's wheel links (PEP 503 HTML, PEP 658/714 metadata) over http(s) or file://.

Pages are parsed, and over http(s) also fetched, by pypi-simple (``PyPISimple``, ``ProjectPage``). What a page says
is untrusted input:

* a PEP 658 ``.metadata`` file is fetched only when the page gives its hash (``data-core-metadata="sha256=..."``
  in HTML, ``core-metadata`` in PEP 691 JSON; pypi-simple reads no other spelling, so a page with only the older
  ``data-dist-info-metadata``, or ``data-core-metadata="true"``, is read as having no metadata), and believed only
  when it matches that hash (else ``DigestMismatch``) and is core metadata whose Name and Version are the wheel
  file's (else ``InvalidWheel``);
* a wheel downloaded in its place is checked against its ``#sha256=`` when the page gives one, and must be a zip
  with one ``.dist-info/METADATA`` naming the same Name and Version;
* every URL (the index's and each link's) must parse, with a host for http(s); a page read over http(s) may
  link only to http(s) URLs: a ``file:`` (or any other) link is refused, so a remote index cannot make this
  tool or the installer read the local disk (``InvalidIndexUrl``).

``user:password@`` in an index URL becomes a Basic ``Authorization`` header for that index's own URLs (links to
another host do not inherit it) and is redacted from every message.

``wheel_download`` downloads a wheel in place of a missing ``.metadata`` file; ``core_metadata`` checks what the
metadata says and reads which torch it requires.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

import requests
from packaging.utils import canonicalize_name
from pypi_simple import (
    DigestMismatchError,
    DistributionPackage,
    NoDigestsError,
    NoMetadataError,
    NoSuchProjectError,
    ProjectPage,
    PyPISimple,
    UnsupportedContentTypeError,
    UnsupportedRepoVersionError,
)

from kernelwheel.index.body_limit import TooLarge, mount_body_limit
from kernelwheel.io.answer_deadline import call_within
from kernelwheel.io.errors import (
    DigestMismatch,
    IndexUnreachable,
    InvalidIndexUrl,
    InvalidWheelName,
    ToolError,
    one_line,
)
from kernelwheel.io.limited_read import read_limited
from kernelwheel.io.urls import printable, redact, url_problem
from kernelwheel.wheels.naming import WheelName

# Seconds, for every request: to connect, and between two reads of the answer (requests' timeout).
TIMEOUT_S = 30
# Seconds for each whole answer (``answer_s``): a page or a .metadata file in full; a wheel's headers, its body
# getting this plus the time its bytes so far take at MIN_BYTES_PER_S. A read timeout alone never ends an answer
# that drips a byte every 2 s. Tunable by this variable (docs/install.md).
ANSWER_ENV = "KERNELWHEEL_INDEX_TIMEOUT"
_ANSWER_S = 60.0
_HTTP = ("http", "https")
T = TypeVar("T")
# A project page or a .metadata file is refused past this size while it is read: the deadline bounds how long an
# index can talk, this bounds what it can make the tool hold. pypi-simple parses a page into ~40x its size (a 17 MB
# page of 200,000 links took the command to 800 MB); a kernel's page of a few thousand wheels is well under 1 MiB,
# and the index writer refuses a METADATA over 4 MiB anyway. docs/install.md names both limits.
_MAX_PAGE_BYTES = 4 << 20
# ... and a page holding more tags or JSON objects and arrays than this (``<``, ``{``, ``[``, counted before it is
# parsed) is refused: parsing costs a few kB per element whatever its size in bytes, so bytes alone do not bound it
# (4 MiB of bare ``<a>`` tags are 1.4 million elements). A wheel link is 2 or 3 tags: about 8,000 wheels.
_MAX_PAGE_ELEMENTS = 24_000


@dataclass(frozen=True)
class Candidate:
    """One wheel link of a project page."""

    filename: str
    url: str  # without the #hash fragment; carries the index's user:password@ when on the index's own host
    metadata_url: str | None  # PEP 658 / 714: ``url + ".metadata"``, when the page says the file exists
    digests: Mapping[str, str] = field(default_factory=dict, hash=False)  # of the wheel: {"sha256": hex}
    metadata_digests: Mapping[str, str] = field(default_factory=dict, hash=False)  # of the .metadata file

    @property
    def name(self) -> WheelName:
        return WheelName.parse(self.filename)


INDEX_URL_FORM = "http(s)://host[:port]/.../simple/ or file:///path/to/simple/"


def check_url(url: str, *, what: str = "index URL", schemes: tuple[str, ...] = (*_HTTP, "file"),
              expected: str = INDEX_URL_FORM) -> str:
    """``url`` if it is usable (parses, known scheme, a valid host and port for http(s)), else ``InvalidIndexUrl``
    saying what is wrong and the ``expected`` form."""
    problem = url_problem(url, schemes)
    if problem is not None:
        raise InvalidIndexUrl(f"{what} {printable(redact(url))} is not usable: {problem}; expected {expected}")
    return url


def project_url(index_url: str, project: str) -> str:
    return index_url.rstrip("/") + f"/{canonicalize_name(project)}/"


# ---------------------------------------------------------------------------------------------------- transport


def _page_too_large(url: str) -> ToolError:
    return IndexUnreachable(f"{redact(url)}: the answer is over {_MAX_PAGE_BYTES >> 20} MiB, refusing it")


def pypi_simple_client(url: str, max_bytes: int = _MAX_PAGE_BYTES, too_large: TooLarge = _page_too_large) -> PyPISimple:
    """A pypi-simple client for ``url`` (an index root, or a file of it), with the Basic auth its URL carries, whose
    answers are refused past ``max_bytes`` with ``too_large(url)``.

    Auth is passed explicitly, so that a ``~/.netrc`` entry does not silently replace it; the session is used
    for this one URL's requests only, so the credentials go nowhere else (requests drops them on a redirect
    to another host).
    """
    parts = urlsplit(url)
    auth = (unquote(parts.username), unquote(parts.password or "")) if parts.username is not None else None
    client = PyPISimple(endpoint=url, auth=auth)
    mount_body_limit(client.s, max_bytes, too_large)
    return client


def _reason(exc: BaseException) -> str:
    """The innermost cause of a requests error (``[Errno 111] Connection refused``), free of credentials."""
    if isinstance(exc, requests.Timeout):
        return f"no answer within {TIMEOUT_S} s"
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        return f"HTTP {exc.response.status_code} {exc.response.reason}"
    inner: BaseException = exc
    for _ in range(10):
        reason = getattr(inner, "reason", None)
        cause = reason if isinstance(reason, BaseException) else inner.__cause__
        if cause is None and inner.args and isinstance(inner.args[0], BaseException):
            cause = inner.args[0]
        if cause is None:
            break
        inner = cause
    return str(inner) or type(inner).__name__


def unreachable(url: str, exc: BaseException) -> IndexUnreachable:
    reason = _reason(exc)
    password = urlsplit(url).password
    if password:  # belt and braces: requests' own messages quote the URL they were given
        reason = reason.replace(password, "***").replace(unquote(password), "***")
    if isinstance(exc, requests.HTTPError):
        return IndexUnreachable(f"{redact(url)}: {reason}")
    return IndexUnreachable(f"{redact(url)}: {reason}; is the index URL right and the server running?")


def _read_file(url: str, max_bytes: int = _MAX_PAGE_BYTES, too_large: TooLarge = _page_too_large) -> bytes | None:
    """The bytes of a file:// URL (a folder URL reads its ``index.html``); None when there is no such file; past
    ``max_bytes``, ``too_large(url)`` as for an http(s) answer (a page linked to /dev/zero must not fill memory).

    pypi-simple's client is requests-based and requests does not read file://, so a static index tree is read
    from disk here; its pages are still parsed by pypi-simple (``ProjectPage.from_html``).
    """
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise IndexUnreachable(f"{redact(url)}: a file:// URL must name a local path (file:///...)")
    path = Path(url2pathname(unquote(parts.path)))
    if parts.path.endswith("/"):
        path /= "index.html"
    try:
        data = read_limited(path, max_bytes)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as exc:
        raise IndexUnreachable(f"{redact(url)}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise too_large(url)
    return data


def check_scheme(url: str) -> str:
    return urlsplit(check_url(url)).scheme


def mismatch(what: str, url: str, algorithm: str, expected: str, actual: str) -> DigestMismatch:
    return DigestMismatch(
        f"{redact(url)}: the {what} does not match the index's hash ({algorithm} {actual}, the page says "
        f"{expected}); the index is stale or was tampered with: rebuild it (kernelwheel index) or ask "
        "its owner"
    )


def _check_local(data: bytes, digests: Mapping[str, str], url: str, what: str) -> None:
    """pypi-simple's digest check (``verify=True``) for data read from a file:// tree or downloaded into memory."""
    known = {alg: value for alg, value in digests.items() if alg in hashlib.algorithms_available}
    if digests and not known:
        raise DigestMismatch(f"{redact(url)}: the {what} has no hash this tool can check ({', '.join(digests)})")
    for algorithm, expected in known.items():
        actual = hashlib.new(algorithm, data).hexdigest()
        if actual != expected.lower():
            raise mismatch(what, url, algorithm, expected, actual)


def _package(candidate: Candidate) -> DistributionPackage:
    """The candidate as pypi-simple's ``DistributionPackage`` (whose ``metadata_url`` is ``url + ".metadata"``)."""
    return DistributionPackage(
        filename=candidate.filename,
        url=candidate.url,
        project=None,
        version=None,
        package_type="wheel",
        digests=dict(candidate.digests),
        requires_python=None,
        has_sig=None,
        has_metadata=candidate.metadata_url is not None,
        metadata_digests=dict(candidate.metadata_digests),
    )


def answer_s() -> float:
    """Seconds for one answer (``KERNELWHEEL_INDEX_TIMEOUT``, default 60), read at call time."""
    text = os.environ.get(ANSWER_ENV, "").strip()
    if not text:
        return _ANSWER_S
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 0 < seconds <= 86400:  # also refuses nan
        raise InvalidIndexUrl(f"{ANSWER_ENV}: expected a positive number of seconds, at most 86400, got {text!r:.40}")
    return seconds


def late(url: str, seconds: float) -> IndexUnreachable:
    return IndexUnreachable(
        f"{redact(url)}: no complete answer within {seconds:g} s ({ANSWER_ENV}); the server is too slow or is "
        "holding the connection open")


def _within(url: str, work: Callable[[], T]) -> T:
    """``work()`` (one request and its whole answer), or ``IndexUnreachable`` once ``answer_s()`` passed."""
    seconds = answer_s()
    try:
        return call_within(seconds, work, f"answer from {redact(url)}")
    except TimeoutError:
        raise late(url, seconds) from None


# ---------------------------------------------------------------------------------------------------- pages


def _check_elements(body: bytes, url: str) -> None:
    """Refuse a page of more than ``_MAX_PAGE_ELEMENTS`` tags or JSON objects and arrays before it is parsed: what
    parsing holds grows with their number, which the byte limit alone leaves at millions."""
    elements = body.count(b"<") + body.count(b"{") + body.count(b"[")
    if elements > _MAX_PAGE_ELEMENTS:
        raise IndexUnreachable(
            f"{redact(url)}: the page holds {elements} tags or JSON objects, more than the {_MAX_PAGE_ELEMENTS} "
            f"(about {_MAX_PAGE_ELEMENTS // 3} wheels) this tool reads; refusing it")


def _fetch_page(client: PyPISimple, project: str, page_url: str) -> ProjectPage:
    """pypi-simple's ``get_project_page``, with the body (read under the byte limit) checked by ``_check_elements``
    before pypi-simple parses it."""
    url = client.get_project_url(project)
    response = client.s.get(url, timeout=TIMEOUT_S, headers={"Accept": client.accept})
    if response.status_code == 404:
        raise NoSuchProjectError(project, url)
    response.raise_for_status()
    _check_elements(response.content, page_url)
    return ProjectPage.from_response(response, project)


def _project_page(index_url: str, project: str) -> ProjectPage | None:
    page_url = project_url(index_url, project)
    try:
        if check_scheme(index_url) == "file":
            body = _read_file(page_url)
            if body is None:
                return None
            _check_elements(body, page_url)
            return ProjectPage.from_html(project, body, base_url=page_url)
        def fetch() -> ProjectPage:
            with pypi_simple_client(index_url) as client:
                return _fetch_page(client, project, page_url)

        return _within(page_url, fetch)
    except ToolError:
        raise
    except NoSuchProjectError:
        return None  # 404: no such project (or no such per-torch sub-index)
    except requests.RequestException as exc:
        raise unreachable(page_url, exc) from None
    except UnsupportedContentTypeError as exc:
        raise IndexUnreachable(
            f"{redact(page_url)}: not an index page (Content-Type {exc.content_type}); does the URL end in /simple/?"
        ) from None
    except UnsupportedRepoVersionError as exc:
        raise IndexUnreachable(f"{redact(page_url)}: {exc}") from None
    except ValueError as exc:  # a link pypi-simple cannot join to the page URL; urllib3's URL errors; bad JSON
        raise IndexUnreachable(f"{redact(page_url)}: not a readable index page ({one_line(exc)})") from None


def list_candidates(index_url: str, project: str) -> list[Candidate] | None:
    """Every wheel on the project's page; None when the index has no page for the project.

    A page read over http(s) that links to anything but an http(s) URL (``file:`` above all) is refused: a remote
    index must not make this tool (or the installer after it) read files from the local disk.
    """
    check_url(index_url)
    page = _project_page(index_url, project)
    if page is None:
        return None
    remote = urlsplit(index_url).scheme in _HTTP
    page_url = redact(project_url(index_url, project))
    candidates = []
    for package in page.packages:
        problem = url_problem(package.url, _HTTP if remote else (*_HTTP, "file"))
        if problem is not None:
            link, text = printable(redact(package.url)), printable(package.filename)
            if remote and urlsplit(package.url).scheme == "file":
                raise InvalidIndexUrl(f"{page_url} links {text} to {link}: a remote index may not point at local "
                                      "files, refusing it")
            raise InvalidIndexUrl(f"{page_url} links {text} to {link}, which is not usable: {problem}; refusing "
                                  "the page")
        parts = urlsplit(package.url)
        filename = unquote(parts.path.rsplit("/", 1)[-1])  # what the installer will take it for, not the link text
        if not filename.endswith(".whl"):
            continue
        try:
            WheelName.parse(filename)
        except InvalidWheelName:
            continue  # not a wheel this tool can reason about; the installer will ignore it too
        # Without a hash on the page a .metadata file proves nothing: it is not fetched at all.
        metadata_url = package.metadata_url if package.has_metadata and package.metadata_digests else None
        candidates.append(
            Candidate(filename, package.url, metadata_url, dict(package.digests), dict(package.metadata_digests or {}))
        )
    return candidates


# ---------------------------------------------------------------------------------------------------- files


def metadata_file(candidate: Candidate) -> bytes | None:
    """The candidate's verified PEP 658 ``.metadata``; None when the index has none after all (404)."""
    assert candidate.metadata_url is not None
    url = candidate.metadata_url
    what = f".metadata of {candidate.filename}"
    if check_scheme(url) == "file":
        data = _read_file(url)
        if data is not None:
            _check_local(data, candidate.metadata_digests, url, what)
        return data
    def fetch() -> bytes:
        with pypi_simple_client(url) as client:
            return client.get_package_metadata_bytes(
                _package(candidate), verify=bool(candidate.metadata_digests), timeout=TIMEOUT_S
            )

    try:
        return _within(url, fetch)
    except NoMetadataError:
        return None
    except DigestMismatchError as exc:
        raise mismatch(what, url, exc.algorithm, exc.expected_digest, exc.actual_digest) from None
    except NoDigestsError:
        raise DigestMismatch(
            f"{redact(url)}: the {what} has no hash this tool can check ({', '.join(candidate.metadata_digests)})"
        ) from None
    except requests.RequestException as exc:
        raise unreachable(url, exc) from None
    except ValueError as exc:  # urllib3's URL errors (an invalid host the page's link names)
        raise IndexUnreachable(f"{redact(url)}: {one_line(exc)}") from None
