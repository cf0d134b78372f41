"""The path jail: every path a tool touches is resolved and checked against the project root."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ToolError


def resolve_in_root(root: Path, path_in_project: str, *, must_exist: bool = False) -> Path:
    """Resolve ``path_in_project`` (relative to ``root``, or absolute inside it) to a real path.

    Symlinks are followed before the check, and the check compares path components, so a
    sibling folder sharing a prefix with the root (``/srv/proj2`` for ``/srv/proj``) is outside.
    """
    if not isinstance(path_in_project, str):
        raise ToolError("pathInProject must be a string")
    if "\x00" in path_in_project:
        raise ToolError("pathInProject must not contain NUL characters")
    raw = path_in_project.strip()
    if raw in ("", "/", ".", "./"):
        candidate = root
    else:
        given = Path(raw.replace("\\", "/")) if os.sep == "/" else Path(raw)
        candidate = given if given.is_absolute() else root / given
    resolved = Path(os.path.realpath(candidate))
    if not is_inside(root, resolved):
        raise ToolError(f"Path is outside the project root: {path_in_project}")
    if must_exist and not resolved.exists():
        raise ToolError(f"File not found: {path_in_project}")
    return resolved


def is_inside(root: Path, path: Path) -> bool:
    """True when ``path`` is ``root`` or below it, compared component by component."""
    root_parts = root.parts
    return path.parts[: len(root_parts)] == root_parts


def relative_path(root: Path, path: Path) -> str:
    """The project-relative form of ``path`` with ``/`` separators (``""`` for the root)."""
    rel = path.relative_to(root).as_posix()
    return "" if rel == "." else rel
