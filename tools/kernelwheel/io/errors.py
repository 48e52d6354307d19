"""The exceptions the tools raise for problems a user can act on.

A command-line entry point prints a ``ToolError`` as one ``error: ...`` line and exits non-zero; anything
else is a bug and keeps its traceback.
"""

from __future__ import annotations


class ToolError(Exception):
    """Base class of every error caused by the user's input or environment."""


def one_line(exc: BaseException) -> str:
    """``exc`` as ``Type: message`` on one line (a library's exception type qualified by its module), for an error
    message that quotes what went wrong underneath."""
    kind = type(exc)
    name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
    return " ".join(f"{name}: {exc}".split())


class InvalidWheelName(ToolError, ValueError):
    """A distribution name, version or tag that cannot go into a wheel."""


class InvalidVariantName(ToolError, ValueError):
    """A build-variant directory name that does not follow the kernel-builder grammar."""


class InvalidWheel(ToolError, ValueError):
    """A wheel file that is not what this project writes (bad METADATA, missing files)."""


class OutputNotWritable(ToolError):
    """An output folder that is a file, lies below a file, cannot be created, or cannot be written into."""


class InvalidVariant(ToolError, ValueError):
    """A build variant whose files cannot go into a wheel or onto the Hub (unsafe path, non-ELF ``.so``, no Python
    package, no ``metadata.json`` digest)."""


class DigestMismatch(ToolError, ValueError):
    """A file whose content does not match the digest that ``metadata.json`` or ``kernels.lock`` records."""


class SignatureInvalid(InvalidVariant):
    """A ``metadata.json.sigstore`` that does not verify: unreadable bundle, wrong signer, or not over metadata.json."""


class SignatureMissing(InvalidVariant):
    """A variant (or installed wheel) without ``metadata.json.sigstore`` where a signature is required."""


class InvalidTrustSettings(ToolError, ValueError):
    """A ``--sigstore-trusted-root`` file or ``--signer-workflow`` URI that cannot be used, or no Sigstore root."""


class InvalidLockfile(ToolError, ValueError):
    """A ``kernels.lock`` that is not a JSON list of ``{repo_id, sha, variants}`` entries."""


class HubError(ToolError):
    """A Hub repository, revision or version that cannot be found or fetched."""


class RepositoryNotFound(HubError):
    """The repository does not exist on the endpoint (or the token cannot see it)."""


class RevisionNotFound(HubError):
    """The repository exists but has no such branch, tag, commit or matching version."""


class OfflineCacheMiss(HubError):
    """``HF_HUB_OFFLINE`` is set and the local cache does not hold what was asked for."""


class UntrustedPublisher(HubError):
    """A Hub repository whose publisher kernels does not trust, and the user did not opt in."""


class KernelDependencyError(ToolError, ValueError):
    """A ``kernel-depends`` entry that cannot be converted: missing, cyclic, or malformed."""


class InvalidIndexState(ToolError, ValueError):
    """``simple/.index-state.json`` that is not what ``kernelwheel index`` writes (wrong shape, a page path outside the
    index); the run changes nothing, and removing the file rebuilds the index from the wheels."""


class InvalidMirrorConfig(ToolError, ValueError):
    """A ``kernelwheel mirror`` configuration file that cannot be used: one line naming the key, what was expected and
    what was given."""


class InvalidMirrorState(ToolError, ValueError):
    """A mirror state file that is not what ``kernelwheel mirror`` writes; that kernel fails, the others go on."""


class LockHeld(ToolError):
    """A lock file another run holds (``io.file_lock``): one line naming it, and its holder when recorded."""


class IndexWriteFailed(ToolError, OSError):
    """A file of the index that could not be written or removed (disk full, read-only, a path leading outside the
    index folder); what was already in place stays as it was."""


class InvalidIndexUrl(ToolError, ValueError):
    """An index URL, or a link on an index page, that cannot be used: malformed, another scheme than http(s)/file,
    or a ``file:`` link on a remote page."""


class InvalidProjectName(ToolError, ValueError):
    """A project to install that is not a distribution name (a requirement with a version, extras or spaces)."""


class IndexUnreachable(ToolError):
    """A package index page that could not be fetched (server down, wrong URL, refused credentials)."""


class TorchNotInstalled(ToolError):
    """The target environment has no torch, so there is no torch version to match a wheel to."""


class NoCompatibleWheel(ToolError):
    """The index has the project, but no wheel of it fits the target's torch, Python and platform."""

    def __init__(self, project: str, index_url: str, target: str, reasons: list[str], hint: str) -> None:
        self.project, self.index_url, self.target, self.reasons, self.hint = project, index_url, target, reasons, hint
        listed = "".join(f"\n  {reason}" for reason in reasons)
        super().__init__(f"{project} has no wheel for {target} on {index_url}{listed}\nhint: {hint}")


class InvalidBuildDir(ToolError, ValueError):
    """A build folder that cannot be published: missing, without variants, or holding entries that are not variants."""


class InvalidReleaseVersion(ToolError, ValueError):
    """A ``--version`` that is not a final PEP 440 release (``1.2.3``), so it cannot name a ``v<version>`` tag."""


class VersionExists(HubError):
    """The ``v<version>`` tag is already on the remote: a published version is never moved or overwritten."""


class PublishFailed(HubError):
    """The remote refused or failed a write (clone, commit, push, upload, branch or tag creation)."""
