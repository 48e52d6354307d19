"""Publish the ``build/<variant>/`` folders of a kernel to a Hub repository under a version: branch + tag.

``publish()`` is the library entry point; ``main(argv)`` is ``kernelwheel publish``. For ``--version 1.2.3`` one
commit lands on the version **branch** ``v1`` (created from ``main`` when missing) and the **tag** ``v1.2.3`` points
at that commit. The two ref schemes exist because the ``kernels`` library changed how it finds versions:

* kernels ≤ 0.11 took ``get_kernel(repo, version=">=1.2,<2")``: a PEP 440 specifier matched against ``v<X.Y.Z>``
  **tags** (``_versions.py``: ``list_repo_refs(...).tags`` parsed with ``packaging``; the newest match wins).
* kernels ≥ 0.12 takes ``get_kernel(repo, version=1)``: an integer major, i.e. the **branch** ``v1`` (string specs
  were deprecated in 0.12 and removed in 0.14; ≥ 0.15 requires a version or a revision).
* our ``hub2wheel --version '>=1.2,<1.3'`` (through ``hub``) reads both, and a tag wins over a branch.

Writing both keeps old clients, new clients and hub2wheel working, and a tag is never moved: publishing a version
whose tag exists is refused. The commit *replaces* each published variant folder wholly (files absent from the new
build are deleted, as ``kernels upload`` does with ``delete_patterns``) and keeps the variants already on the branch
that this build does not have.

Before anything is written every entry of the build folder is checked, and all problems are reported at once:

* hidden entries (``.wheel-path``) are ignored; any other entry must be a folder named in the kernel-builder grammar
  (``variants.Variant.parse``);
* paths and symlinks stay inside the variant and ``metadata.json``'s per-file ``digest`` matches (the checks
  hub2wheel uses); only the verified files, copied to a staging folder, are published (``__pycache__`` and
  ``*.pyc`` never are; ``metadata.json.sigstore`` is kept);
* there is a Python package (``__init__.py``), and an integer ``metadata.json`` ``version`` equals the major.

Two transports: ``GitTransport`` (``--git-remote``) treats any git repository as the Hub repository (a Hub repo is one)
and works in a temporary clone, pushing branch and tag with ``git push --atomic``; ``HubTransport`` (the default) uses
``huggingface_hub.HfApi`` (``upload_folder`` with ``allow_patterns``/``delete_patterns``, then ``create_tag``).
"""


from __future__ import annotations

import tempfile
from pathlib import Path

from packaging.version import Version
from rich.console import Console
from rich.filesize import decimal
from rich.markup import escape

from kernelwheel.io.console import make_console, print_step
from kernelwheel.publish.plan import (
    BASE_BRANCH,
    Plan,
    PublishResult,
    Transport,
    check_remote,
    count,
    release_version,
)
from kernelwheel.publish.staging import stage_build


def publish(
    build_dir: Path,
    repo_id: str,
    version: Version | str,
    transport: Transport,
    *,
    dry_run: bool = False,
    console: Console | None = None,
) -> PublishResult:
    """Verify ``build_dir``'s variants, then put them on branch ``v<major>`` and tag ``v<version>`` of ``repo_id``."""
    console = console or make_console()
    version = release_version(version)
    with tempfile.TemporaryDirectory(prefix="kernelwheel-publish-") as tmp:
        staging = Path(tmp) / "build"
        staging.mkdir()
        variants = stage_build(build_dir, staging, version, repo_id.split("/")[-1])
        plan = Plan(repo_id, version, variants)
        verified = f"* Verified {count(variants, 'build variant')} in {build_dir} (metadata.json digests match)"
        print_step(console, verified)
        for v in variants:
            console.print(f"  [green]✓[/] {escape(v.name)}  {len(v.files)} files, {decimal(v.size)}")
        remote = transport.refs(repo_id)
        created = check_remote(plan, remote, transport.label)
        where = (f"at {remote.branches[plan.branch][:12]}" if not created
                 else f"new, from {BASE_BRANCH}" if remote.branches or not remote.exists
                 else "new, the repository's first commit")
        new_repo = "" if remote.exists else f"; {repo_id} will be created"
        print_step(console, (f"* {transport.label}: branch {plan.branch} ({where}), tag {plan.tag} is free{new_repo}"))
        commit = None if dry_run else transport.push(plan, staging, remote, console)
    return PublishResult(repo_id, version, plan.branch, plan.tag, commit, plan.names, transport.label, created, dry_run)
