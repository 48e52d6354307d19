"""The Hugging Face Hub as a source of kernels: the client (versions, snapshots, caches), the background fetch, the
trusted-publisher gate, revision probes and ref listings, and ``sources``, which turns a folder, a revision or a lock
into the ``Source`` a conversion starts from. Imports io/ and format/."""
