"""kernelwheel: Hugging Face Hub kernels as wheels (convert, index, install, publish); pure Python, never torch.

Layers, lowest first; a module imports its own layer and the ones before it, never one after it
(tests/kernelwheel/test_package.py checks both this list and that rule; docs/architecture.md draws them):

io/       the small helpers everything may use: errors, atomic writes, limited reads, JSON, console, URLs, deadlines
format/   the Hub kernel format: variant names, a variant's folder, metadata.json, digests, signatures, depends, locks
hub/      the Hub: settings, client, versions, background fetch, publisher gate, revision probes; sources to convert
wheels/   a source's variants → wheels: selection, each variant checked, its wheel planned (naming, tags), the writer
index/    a static PEP 503/658 index: wheels, pages, state, writer; the reading client, the target and the install plan
publish/  build/<variant>/ folders → a Hub (or git) version; wheels → a package index (twine)
mirror/   a private index kept in sync with the Hub: configuration, per-kernel state, new release tags, the run
cli/      the commands, one module each, and their argparse helpers; a command imports libraries, never a command

One line per module:

__main__                    ``python -m kernelwheel <command>``
io/answer_deadline          one deadline for each whole network answer, however slowly a server sends it
io/atomic                   the one atomic writer: a file or folder appears complete under its final name, or not at all
io/console                  how commands talk to people: rich on stderr, escaped, live progress only on a terminal
io/errors                   the exceptions for problems a user can act on
io/file_lock                flock lock files: shared or exclusive, a bounded wait, the holder named, freed when it dies
io/json_cache               run-to-run caches kept as one JSON file each
io/limited_read             reading a small file the user named or the toolkit found, within limits
io/untrusted_json           JSON from untrusted files, within limits checked before json.loads
io/urls                     URLs a user gives: why one cannot be used, and how to show one without its password
format/build_ids            one metadata.json ``id``, one build (kernels 0.19.1's rule)
format/dependency           a kernel dependency as kernel-depends and locks write it (repo-id + version or revision)
format/digests              metadata.json's per-file digests: written (kernel-builder's hash step) and verified
format/frameworks           each framework's rules in one class: its name pieces, wheel project, label, requirement
format/kernel_depends       kernel-depends, id and kernels-minver as kernels reads them, and the kernels requirement
format/lockfile             kernels.lock files, in both formats kernels has written
format/metadata             the metadata.json keys that changed meaning in kernels 0.19 (build-layout, backend.type)
format/python_depends       python-depends (logical names) → Requires-Dist lines, through kernels' own mapping
format/repo_id              Hub repository ids as kernels uses them, checked by huggingface_hub's own rules
format/signatures           metadata.json.sigstore verified as kernels verifies it
format/signer_policy        who may sign a variant's metadata.json, kept as data, and the Sigstore policy built from it
format/variant_folder       a build variant's folder: its files (safely), its metadata.json and its Python package
format/variant_grammars     the two build-variant name grammars (legacy and kernels 0.19's), each read into typed pieces
format/variant_pieces       a build-variant name's pieces as typed values: framework, backend, arch, Python, noarch, SDK
format/variants             a build-variant name as one typed value (``Variant``), parsed in either grammar
hub/background_fetch        a revision's build/ files fetched in the background: conversion starts before it ends
hub/client                  the Hugging Face Hub: build/<variant>/ files fetched (snapshot_download), a commit's date
hub/recorded_snapshots      complete snapshots recorded online: a rerun skips the download while they are cached
hub/ref_listing             the tags and branches of a Hub repository as last listed, and the release tag of a commit
hub/revision_probe          which commit a branch or tag is at, asked with one HEAD through the standard library
hub/settings                the Hub's environment as huggingface_hub reads it, and where its caches keep each file
hub/sources                 ``Source``, the conversion's input: a local folder, a Hub revision or version, a lock
hub/trust                   trusted kernel publishers: the gate for Hub repositories, applied before anything is fetched
hub/versions                version tags and branches (v1.2.3, v1): listed, recorded, matched to --version
wheels/checked_variant      the pipeline's check: one variant's folder (files, lock, signature, metadata, digests, ELF)
wheels/convert              the pipeline's run: a source's variants, each checked on its own, planned, written as wheels
wheels/dependency_tree      a kernel with its kernel-depends: every dependency first, once per run, no cycles
wheels/dependency_wheels    the wheels a kernel's kernel-depends became, and the Requires-Dist lines pointing at them
wheels/elf                  what a kernel's .so files require (CPU, symbol versions, Python ABI), and so its wheel tags
wheels/kernel_conversion    a kernel converted from what a user names (repository, folder, lock), kernel-depends first
wheels/entry_package        the entry package of a wheel whose build must not be imported directly
wheels/entry_runtime        what such an entry package runs when its kernel is imported (copied into the wheels)
wheels/fatbin               the GPU code in a .so: CUDA fat binary containers and ROCm offload bundles, parsed bounded
wheels/gpu_targets          the GPUs a wheel's binaries run on: read, recorded (JSON, a description line), CUDA's rule
wheels/naming               the one place that spells distribution names, versions, requirements and wheel tags
wheels/noarch               noarch variants: one wheel when they are the same build, one per backend otherwise
wheels/selection            which build variants become wheels in this run, with a reason for every one that does not
wheels/variant_names        variant wheel file names (PEP 825 draft): the label rules and the parser packaging lacks
wheels/variant_wheels       a backend-named wheel's variant wheel: label, variant.json properties (experimental)
wheels/verify               a written wheel (a .whl or an installed distribution) verified again: RECORD, digest, bundle
wheels/wheel_contents       a wheel as this package holds it: name, METADATA and files (bytes, or paths to stream)
wheels/wheel_plan           the pipeline's plan: the wheel a checked variant becomes (name, tags, requirements, files)
wheels/wheel_reader         reading wheel files: every file checked against its RECORD hash, streamed, within limits
wheels/wheel_writer         writing wheel files: reproducible, streamed, written atomically, left alone if unchanged
wheels/zip_layout           a variant in kernels 0.19's "zip" build layout, turned into an ordinary package's files
index/body_limit            HTTP answers read with a byte limit: what an index may make this tool hold in memory
index/client                reading a package index: a project's wheel links and metadata over http(s) or file://
index/core_metadata         a candidate wheel's core metadata, checked against its name and wheel; the torch it requires
index/install_command_line  the install command printed and run: no password on a command line, quoted for a shell
index/install_plan          the install that cannot change torch: the wheel for the installed torch, or why none fits
index/overlap               builds of one version that one machine would accept both of
index/pages                 the HTML of a PEP 503 index: project pages with PEP 658/714 attributes, root pages
index/state                 simple/.index-state.json (what the last run wrote) and the lock that serialises runs
index/target_environment    the target's interpreter and torch (probed, never imported); kernels' CUDA/ROCm rules
index/wheel_download        a wheel an index links to, as a file: hashed as it arrives, within a size cap and a deadline
index/indexed_wheel         what the index needs to know about one wheel, read and validated once
index/target_gpu            the target's GPUs: --gpu-arch, or nvidia-smi's compute capability (torch never imported)
index/torch_minors          the torch minors released so far (torch_minors.json, checked weekly against PyPI)
index/variants_json         <name>-<version>-variants.json: a version's variant.json files checked and merged
index/writer                a static private index for a wheelhouse, with one sub-index per torch minor
publish/git_transport       a git repository (path or URL) as the Hub repository
publish/hub_transport       a Hub repository through huggingface_hub's HfApi
publish/plan                what a publish writes (branch v<major>, tag v<version>, the staged variants) and its checks
publish/release             publish a kernel's build/<variant>/ folders under a version: branch + tag
publish/staging             a build folder checked and copied aside: exactly the bytes that will be published
publish/upload              wheels checked, then uploaded to a package index that takes uploads (twine)
mirror/config               the mirror's TOML configuration: the wheelhouse, signature settings, the kernels to keep
mirror/lock                 which mirror runs may share a wheelhouse at once: a run, a shard, one split of the kernels
mirror/plan                 the repositories an entry names, a shard's share of them, the release tags not converted
mirror/run                  one mirror run: each kernel's new release tags converted as hub2wheel does, then the index
mirror/state                what the mirror converted: one JSON file per kernel, rewritten atomically after each tag
cli/arguments               argparse helpers shared by the commands
cli/command                 what every command does around its work: parser style, error line, exit codes, Ctrl-C
cli/dispatch                ``kernelwheel <command>``: runs one command; ``kernelwheel --help`` lists them
cli/hub2wheel               ``hub2wheel`` (``kernelwheel convert``): a Hub kernel's build variants → wheels
cli/index                   ``kernelwheel index``: a static index for a wheelhouse
cli/mirror                  ``kernelwheel mirror``: a private index kept in sync with Hub kernels
cli/install_command         ``kernelwheel install-command``: the pip/uv command that keeps torch
cli/publish                 ``kernelwheel publish``: build/<variant>/ folders → a Hub repository under a version
cli/upload                  ``kernelwheel upload``: wheels checked, then uploaded with twine
cli/verify_wheel            ``kernelwheel verify``: re-verify a wheel hub2wheel wrote from a signed variant

The public API is the names in ``__all__`` below (docs/api.md documents each; a test keeps the two equal); every
other name, in any module, is internal and may change in any release. They are imported on first use, so that
``import kernelwheel`` (and each command's start-up) pays for no library it does not use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name → the module that defines it (the commands import the same objects from there).
_API: dict[str, str] = {
    # convert a kernel: what to convert, how, and what became of each variant
    "convert_kernel": "wheels.kernel_conversion",
    "KernelRequest": "wheels.kernel_conversion",
    "Options": "wheels.convert",
    "Report": "wheels.convert",
    "VariantFilter": "wheels.selection",
    "TrustPolicy": "hub.trust",
    "SignatureOptions": "format.signatures",
    "HubSettings": "hub.settings",
    # verify a wheel hub2wheel wrote
    "verify_wheel": "wheels.verify",
    "Verification": "wheels.verify",
    # write a static index
    "write_index": "index.writer",
    "IndexReport": "index.writer",
    # plan an install that keeps torch
    "plan_install": "index.install_plan",
    "InstallPlan": "index.install_plan",
    "Environment": "index.target_environment",
    # keep a private index in step with the Hub
    "load_config": "mirror.config",
    "MirrorConfig": "mirror.config",
    "run_mirror": "mirror.run",
    "MirrorReport": "mirror.run",
    "Shard": "mirror.plan",
    # the errors: every failure a user can act on is a ToolError, its message one line
    "ToolError": "io.errors",
    "HubError": "io.errors",
    "RepositoryNotFound": "io.errors",
    "RevisionNotFound": "io.errors",
    "UntrustedPublisher": "io.errors",
    "InvalidVariant": "io.errors",
    "SignatureInvalid": "io.errors",
    "SignatureMissing": "io.errors",
    "DigestMismatch": "io.errors",
    "InvalidWheel": "io.errors",
    "NoCompatibleWheel": "io.errors",
    "IndexUnreachable": "io.errors",
    "InvalidMirrorConfig": "io.errors",
    "LockHeld": "io.errors",
}
__all__ = [  # the keys of _API (a test checks it), spelled out for type checkers and linters
    "DigestMismatch",
    "Environment",
    "HubError",
    "HubSettings",
    "IndexReport",
    "IndexUnreachable",
    "InstallPlan",
    "InvalidMirrorConfig",
    "InvalidVariant",
    "InvalidWheel",
    "KernelRequest",
    "LockHeld",
    "MirrorConfig",
    "MirrorReport",
    "NoCompatibleWheel",
    "Options",
    "Report",
    "RepositoryNotFound",
    "RevisionNotFound",
    "Shard",
    "SignatureInvalid",
    "SignatureMissing",
    "SignatureOptions",
    "ToolError",
    "TrustPolicy",
    "UntrustedPublisher",
    "VariantFilter",
    "Verification",
    "convert_kernel",
    "load_config",
    "plan_install",
    "run_mirror",
    "verify_wheel",
    "write_index",
]

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ imports each on first use
    from kernelwheel.format.signatures import SignatureOptions
    from kernelwheel.hub.settings import HubSettings
    from kernelwheel.hub.trust import TrustPolicy
    from kernelwheel.index.install_plan import InstallPlan, plan_install
    from kernelwheel.index.target_environment import Environment
    from kernelwheel.index.writer import IndexReport, write_index
    from kernelwheel.io.errors import (
        DigestMismatch,
        HubError,
        IndexUnreachable,
        InvalidMirrorConfig,
        InvalidVariant,
        InvalidWheel,
        LockHeld,
        NoCompatibleWheel,
        RepositoryNotFound,
        RevisionNotFound,
        SignatureInvalid,
        SignatureMissing,
        ToolError,
        UntrustedPublisher,
    )
    from kernelwheel.mirror.config import MirrorConfig, load_config
    from kernelwheel.mirror.plan import Shard
    from kernelwheel.mirror.run import MirrorReport, run_mirror
    from kernelwheel.wheels.convert import Options, Report
    from kernelwheel.wheels.kernel_conversion import KernelRequest, convert_kernel
    from kernelwheel.wheels.selection import VariantFilter
    from kernelwheel.wheels.verify import Verification, verify_wheel


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'kernelwheel' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"kernelwheel.{_API[name]}"), name)
    globals()[name] = value  # imported once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
