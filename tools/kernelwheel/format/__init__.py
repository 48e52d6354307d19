"""The Hub kernel format, owned by this project and checked against each supported ``kernels`` release.

variants (both variant-name grammars), metadata (metadata.json's keys), digests (per-file hashes), signatures
(sigstore bundles) and signer_policy (who may sign), python_depends (logical names → pip requirements), dependency
(a kernel dependency as kernel-depends and locks write it), kernel_depends (kernels a build needs at run time),
lockfile (kernels.lock). Nothing here imports a ``kernels`` module: the data kernels
ships, the python-depends mapping and the signer policy, is kept beside the code and compared with every supported
release's own by tests/kernelwheel/format/test_kernels_releases.py.
"""
