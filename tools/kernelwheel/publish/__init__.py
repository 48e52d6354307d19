"""Publishing build/<variant>/ folders to a Hub repository under a version.

plan (refs, checks), staging (verified copies), git and hub (the two transports), release (the entry point).
"""
