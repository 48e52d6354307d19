"""kernelwheel: Hugging Face Hub kernels as wheels (convert, index, install, publish); pure Python, never torch.

The libraries, and their commands in cli/ (``kernelwheel <command>``, ``hub2wheel``); docs/architecture.md says which
layer may import which. One line per sub-package and module (tests/kernelwheel/test_package.py keeps this list true):

cli/              the commands, one module each (hub2wheel, index, install_command, ...), and dispatch
format/           the Hub kernel format: variant names, metadata.json, digests, signatures, the depends, locks
index/            a static PEP 503/658 index: wheels, pages, state, overlap, writer, and the reading client
publish/          build/<variant>/ folders → a Hub (or git) version; wheels → a package index (twine)
__main__          ``python -m kernelwheel <command>``
answer_deadline   one deadline for each whole network answer, however slowly a server sends it
arguments         argparse helpers shared by the commands
atomic            the one atomic writer: a file or folder appears complete under its final name, or not at all
background_fetch  a revision's build/ files fetched in the background, so conversion starts before the download ends
build_ids         one metadata.json ``id``, one build (kernels 0.19.1's rule)
console           how commands talk to people: rich on stderr, messages escaped, live progress only on a terminal
convert           one kernel build/ tree → wheels, each selected variant checked on its own
dependency_tree   a kernel converted with its kernel-depends: every dependency first, once per run, cycles refused
elf               what a kernel's .so files require (CPU, symbol versions, Python ABI), and so its wheel tags
entry             the entry package of a wheel whose build must not be imported directly
entry_runtime     what such an entry package runs when its kernel is imported (copied into the wheels)
errors            the exceptions for problems a user can act on
hub               the Hugging Face Hub: version → commit, and fetching build/<variant>/ files
install           the install command that cannot change torch: the wheel for the installed torch, or why none fits
json_cache        run-to-run caches kept as one JSON file each
jsonload          JSON from untrusted files, within limits checked before json.loads
layout            a build variant's folder: its files (safely), its metadata.json and its Python package
limited_read      reading a small file the user named or the toolkit found, within limits
naming            the one place that spells distribution names, versions, requirements and wheel tags
noarch            noarch variants: one wheel when they are the same build, one per backend otherwise
ref_listing       the tags and branches of a Hub repository as last listed, and the release tag of a commit
repo_id           Hub repository ids as kernels uses them, checked by huggingface_hub's own rules
revision_probe    which commit a branch or tag is at, asked with one HEAD through the standard library
selection         which build variants become wheels in this run, with a reason for every one that does not
sources           where a build/ tree comes from: a local folder, a Hub revision or version, or a kernels.lock
trust             trusted kernel publishers: the gate for Hub repositories, applied before anything is fetched
urls              URLs a user gives: why one cannot be used, and how to show one without its password
wheelfile         reading and writing wheel files: reproducible, streamed, written atomically
zip_layout        a variant in kernels 0.19's "zip" build layout, turned into an ordinary package's files
"""
