"""The Hub kernel format, owned by this project and checked against each supported ``kernels`` release: variant
names, a variant's folder and metadata.json, digests, signatures and who may sign, python-depends, kernel-depends,
locks, repository ids and build ids. Imports io/ only. Nothing here imports a ``kernels`` module: the data kernels
ships (the python-depends mapping, the signer policy) is kept beside the code and compared with every supported
release's own by tests/kernelwheel/format/test_kernels_releases.py.
"""
