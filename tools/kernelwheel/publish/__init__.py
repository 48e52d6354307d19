"""Publishing build/<variant>/ folders to a Hub repository under a version, and wheels to a package index.

plan (refs, checks), staging (verified copies), git_transport and hub_transport (the two ways to a repository),
release (the entry point); upload (wheels validated, then ``twine upload`` to pypiserver or any twine repository).
Imports io/, format/, wheels/, index/.
"""
