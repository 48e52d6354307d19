"""The generic kernel → wheel toolkit: libraries only (no command line, no img2gray specifics, no torch import).

format (the Hub kernel format: variant names, metadata.json, digests, signatures, python- and kernel-depends,
locks), naming (names, versions, tags), selection (which variants become wheels), layout (a variant's files), elf
(what a ``.so`` needs; the manylinux tag), wheelfile (reproducible wheels), hub + sources (where a ``build/`` tree
comes from), convert (variants → wheels), index (PEP 503/658 pages, state, client), install (choosing a wheel for
an environment), publish (build/ → Hub version), console, atomic and errors (how every command reports, writes and
fails).
"""
