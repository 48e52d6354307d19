"""The generic kernel → wheel toolkit: libraries only (no command line, no img2gray specifics, no torch import).

naming (names, versions, tags), variants + selection (the build-variant grammar and which become wheels), layout +
digests + lockfile (a variant's files and their checks), elf (what a ``.so`` needs; the manylinux tag), wheelfile
(reproducible wheels), hub + sources (where a ``build/`` tree comes from), convert (variants → wheels), index
(PEP 503/658 pages, state, client), install (choosing a wheel for an environment), publish (build/ → Hub version),
console, atomic and errors (how every command reports, writes and fails).
"""
