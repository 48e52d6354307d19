"""A ``Source``'s build variants → wheels, as a pipeline that ``convert`` runs, one step per module: ``selection``
(which variants), ``checked_variant`` (a variant's folder checked: files, lock, signature, metadata, digests, ELF),
``wheel_plan`` (the wheel it becomes: name and tags from ``naming`` and ``elf``, requirements, description, the
entry package, as ``wheel_contents``) and ``wheel_writer`` (the writer); ``dependency_tree`` runs it around
kernel-depends. Imports io/, format/ and hub/."""
