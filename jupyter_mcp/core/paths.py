"""The path jail: every path a tool touches is resolved and checked against the project root."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from .errors import ToolError


def resolve_in_root(root: Path, path_in_project: str, *, must_exist: bool = False) -> Path:
    """Resolve ``path_in_project`` (relative to ``root``, or absolute inside it) to a real path.

    Symlinks are followed before the check, and the check compares path components, so a
    sibling folder sharing a prefix with the root (``/srv/proj2`` for ``/srv/proj``) is outside.
    """
    raw = checked_path_argument(root, path_in_project)
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


def checked_path_argument(root: Path, path_in_project: str) -> str:
    """``path_in_project``, stripped, once it is what a path argument must be: a string with no
    NUL that the OS can take as a path under ``root``."""
    if not isinstance(path_in_project, str):
        raise ToolError("pathInProject must be a string")
    if "\x00" in path_in_project:
        raise ToolError("pathInProject must not contain NUL characters")
    check_os_limits(root, path_in_project)
    return path_in_project.strip()


def os_encodable(text: str) -> bool:
    """True when ``text`` can be a path or process argument (surrogate-escaped bytes are fine)."""
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        return False
    return True


def check_os_limits(root: Path, path_in_project: str) -> None:
    """Refuse a path the operating system cannot take: not encodable, or names too long.

    Without this, such paths fail deep inside a tool with an OSError or UnicodeEncodeError.
    """
    try:
        encoded = os.fsencode(path_in_project)
    except UnicodeEncodeError as e:
        raise ToolError(
            f"Path contains characters that cannot be a file name (at position {e.start}): "
            f"{path_in_project[:200]!r}"
        ) from None
    name_max, path_max = _os_limits(str(root))
    full = encoded if os.path.isabs(encoded) else os.fsencode(str(root)) + b"/" + encoded
    if len(full) >= path_max:
        raise ToolError(f"Path is longer than the file system allows ({path_max} bytes)")
    for part in encoded.replace(b"\\", b"/").split(b"/"):
        if len(part) > name_max:
            shown = os.fsdecode(part[:40])
            raise ToolError(
                f"Path has a name of {len(part)} bytes, over the file system's limit of "
                f"{name_max}: {shown}…"
            )


@functools.lru_cache(maxsize=64)
def _os_limits(root: str) -> tuple[int, int]:
    """The longest name and path the file system of ``root`` takes, asked once per root: two
    system calls on every path a tool resolved, for limits that stay as they are."""
    try:
        return os.pathconf(root, "PC_NAME_MAX"), os.pathconf(root, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):
        return 255, 4096


def is_inside(root: Path, path: Path) -> bool:
    """True when ``path`` is ``root`` or below it, compared component by component."""
    root_parts = root.parts
    return path.parts[: len(root_parts)] == root_parts


def relative_path(root: Path, path: Path) -> str:
    """The project-relative form of ``path`` with ``/`` separators (``""`` for the root)."""
    rel = path.relative_to(root).as_posix()
    return "" if rel == "." else rel
