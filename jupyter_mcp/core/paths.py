"""The path jail: every path a tool touches is resolved and checked against the project root.

Inside the root, the server's own credentials are sealed too: Jupyter's runtime folder (its
``jpserver-<pid>.json`` holds the server's token), its configuration folder (a config file may
hold a token or password hash) and the folder of the OAuth grants file. Under JupyterHub the
root is often ``$HOME``, which holds all three; no agent needs them, so no principal (an
``mcp:read`` token or the server's own) reads, writes, lists or searches them. The rule lives
here, beside the jail, so that every caller gets it: :func:`resolve_in_root` refuses a sealed
path and :func:`sealed_names` gives the walks (search index, code analysis, listings) what to
leave out.
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path

from jupyter_core.paths import jupyter_config_dir, jupyter_data_dir, jupyter_runtime_dir

from .errors import ToolError

log = logging.getLogger("jupyter_mcp")

#: The sealed paths the server adds to jupyter_core's defaults (its configured runtime folder,
#: its grants file), handed to worker processes in their environment (see :func:`seal`).
SEALED_ENV = "JUPYTER_MCP_SEALED_PATHS"
#: The environment jupyter_core derives its folders from: a change means other folders.
_FOLDER_ENV = (
    "JUPYTER_RUNTIME_DIR",
    "JUPYTER_CONFIG_DIR",
    "JUPYTER_DATA_DIR",
    "JUPYTER_PLATFORM_DIRS",
    "JUPYTER_PREFER_ENV_PATH",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
    "APPDATA",
    "HOME",
    SEALED_ENV,
)


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
    if is_sealed(root, resolved):
        raise sealed_error(path_in_project)
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
    root_parts, parts = root.parts, path.parts
    if parts[: len(root_parts)] == root_parts:
        # Below the root component by component (as is_inside compares): the rest joined by
        # "/" is what relative_to().as_posix() answers, without the paths it makes (every
        # resource link of a call asks for one).
        return "/".join(parts[len(root_parts) :])
    rel = path.relative_to(root).as_posix()
    return "" if rel == "." else rel


# --------------------------------------------------------------------------- sealed folders


def seal(paths: list[Path | str]) -> None:
    """Seal ``paths`` (files or folders) besides jupyter_core's default folders.

    The server calls this once as it starts, with its own runtime folder and grants file; the
    list replaces the one before (one server per process), and reaches the worker processes
    through :data:`SEALED_ENV` (:func:`worker_environment`).
    """
    os.environ[SEALED_ENV] = os.pathsep.join(os.path.realpath(p) for p in paths)


def worker_environment() -> dict[str, str]:
    """What a worker process's environment must carry for it to seal the same paths."""
    value = os.environ.get(SEALED_ENV)
    return {SEALED_ENV: value} if value else {}


def sealed_paths() -> tuple[Path, ...]:
    """The real paths of every sealed file and folder (for the current environment)."""
    return _sealed_paths(tuple(os.environ.get(k) for k in _FOLDER_ENV))


@functools.lru_cache(maxsize=8)
def _sealed_paths(_environment: tuple[str | None, ...]) -> tuple[Path, ...]:
    found = [
        jupyter_runtime_dir(),
        jupyter_config_dir(),
        os.path.join(jupyter_data_dir(), "jupyter_mcp"),
    ]
    found += [p for p in os.environ.get(SEALED_ENV, "").split(os.pathsep) if p]
    unique = dict.fromkeys(Path(os.path.realpath(p)) for p in found)
    return tuple(unique)


def sealed_names(root: Path) -> frozenset[str]:
    """The root-relative paths (``/`` separators) of the sealed places inside the real path
    ``root``: what a walk of the root leaves out."""
    return _sealed_names(root, sealed_paths())


@functools.lru_cache(maxsize=32)
def _sealed_names(root: Path, sealed: tuple[Path, ...]) -> frozenset[str]:
    names = set()
    for path in sealed:
        if is_inside(path, root):
            # The server was started to serve this very folder (or one inside it): sealing
            # it would leave nothing; its own credentials below it are still sealed.
            log.warning(
                "jupyter_mcp: the project root %s is inside %s, which is not sealed", root, path
            )
        elif is_inside(root, path):
            names.add(relative_path(root, path))
    return frozenset(names)


def sealed_error(path_in_project: str) -> ToolError:
    """The refusal of a sealed path (the same whichever tool asked)."""
    return ToolError(
        f"Path is in the Jupyter server's own runtime, configuration or credentials "
        f"folder, which no tool reads or writes: {path_in_project}"
    )


def is_sealed(root: Path, path: Path) -> bool:
    """True when the real path ``path`` (inside the real path ``root``) is or is below a
    sealed place."""
    names = sealed_names(root)
    if not names:
        return False
    rel = relative_path(root, path)
    return any(rel == name or rel.startswith(name + "/") for name in names)
