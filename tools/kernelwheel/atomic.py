"""The one atomic writer: a file appears under its final name complete, or not at all.

Everything is written to a temporary name in the destination's own folder (so the final step is a same-filesystem
``os.replace``), and the temporary file is removed on any failure, including ``KeyboardInterrupt``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(final: Path, mode: int = 0o644) -> Iterator[Path]:
    """Yield a temporary path next to ``final``; on success it becomes ``final`` (with ``mode``), else it is removed."""
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".part", dir=final.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        os.chmod(tmp, mode)
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` atomically; False (and nothing written) when the file already holds exactly it."""
    try:
        if path.read_bytes() == data:
            return False
    except OSError:
        pass
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return True


def replace_tree(staged: Path, final: Path, trash: Path) -> None:
    """Swap the complete folder ``staged`` in as ``final``; an old ``final`` is moved to ``trash`` (same filesystem,
    removed by the caller's temporary directory), so ``final`` is always either the old or the new folder."""
    if final.exists():
        final.replace(trash)
    staged.replace(final)
