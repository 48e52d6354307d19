"""A ``Source``'s build variants → wheels, as a pipeline: ``selection`` (which variants), the format's checks (files,
metadata, digests, signature), ``elf`` and ``naming`` (the wheel plan: name, tags, requirements), the entry package,
and ``wheelfile`` (the writer); ``convert`` runs it, ``dependency_tree`` around kernel-depends. Imports io/, format/
and hub/."""
