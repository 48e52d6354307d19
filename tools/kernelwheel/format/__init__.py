"""The Hub kernel format, owned by this project and checked against each supported ``kernels`` release.

variants (both variant-name grammars), metadata (metadata.json's keys), digests (per-file hashes), signatures
(sigstore bundles and the signer policy), python_depends (logical names → pip requirements), kernel_depends
(kernels a build imports), lockfile (kernels.lock). Nothing here imports a ``kernels`` module: the data kernels
ships (the python-depends mapping, the signer policy) is kept beside the code and compared with every supported
release's own by tests/kernelwheel/format/test_kernels_releases.py.
"""
