"""File facts: is this file a notebook, is it binary, and the stamp that says it changed.

Every part of the server that asks one of these questions (file tools, search, code analysis,
git, breakpoints) asks it here, so they all agree. Only the standard library is imported: the
code-analysis worker process imports this module too.
"""

from __future__ import annotations

import os

NOTEBOOK_SUFFIX = ".ipynb"
#: How much of a file's start is searched for a NUL byte to call it binary.
SNIFF_BYTES = 8192

#: ``(st_mtime_ns, st_size, st_ino)``: a file whose stamp is unchanged has not been written
#: (an atomic write replaces the inode, so even a same-size write within one tick shows).
Stamp = tuple[int, int, int]


def is_notebook(path: str | os.PathLike[str]) -> bool:
    """True for ``.ipynb`` files (any case), which tools see through their text view."""
    return os.path.splitext(os.fspath(path))[1].lower() == NOTEBOOK_SUFFIX


def looks_binary(data: bytes) -> bool:
    """Heuristic used by git and ripgrep: a NUL byte in the first block means binary."""
    return b"\x00" in data[:SNIFF_BYTES]


def stamp_of_stat(st: os.stat_result) -> Stamp:
    """The change stamp of a file from its stat."""
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def stamp_of(path: str | os.PathLike[str]) -> Stamp | None:
    """The change stamp of the file at ``path``; None when it cannot be stat-ed."""
    try:
        return stamp_of_stat(os.stat(path))
    except OSError:
        return None
