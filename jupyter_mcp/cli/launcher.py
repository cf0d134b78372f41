"""The argv that starts the stdio relay for a server: ``jupyter_mcp.stdio_command()``.

A plugin (or any program) that launches or configures an agent passes this argv on: running it
relays MCP over stdin/stdout to the Jupyter server that serves the project. The relay finds
the server, its URL and its token through Jupyter's runtime files when it starts, so the argv
itself never holds the URL or the token.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..core.toolsets import TOOLSETS, parse_toolsets
from . import PROGRAM
from .discovery import find_server, running_servers


def _in_process_root() -> str | None:
    """The root of the Jupyter server running in this process, if any."""
    if "jupyter_server.serverapp" not in sys.modules:
        return None
    from jupyter_server.serverapp import ServerApp

    if not ServerApp.initialized():
        return None
    return str(ServerApp.instance().root_dir) or None


def relay_launcher() -> list[str]:
    """How to start this environment's relay: its console script, else ``python -m``."""
    scripts = Path(sys.executable).parent
    for name in (PROGRAM, PROGRAM + ".exe"):
        script = scripts / name
        if script.is_file() and os.access(script, os.X_OK):
            return [str(script)]
    return [sys.executable, "-m", "jupyter_mcp.cli"]


def toolsets_arguments(toolsets: str | None) -> list[str]:
    """``["--toolsets", "files,git"]`` for a choice of tool sets (checked), ``[]`` for none."""
    if not toolsets:
        return []
    return ["--toolsets", ",".join(sorted(parse_toolsets(toolsets), key=TOOLSETS.index))]


def stdio_command(
    root_dir: str | os.PathLike[str] | None = None, *, toolsets: str | None = None
) -> list[str] | None:
    """The argv of the stdio relay for the server that serves ``root_dir``, or None.

    ``root_dir`` defaults to the root of the Jupyter server running in this process (a plugin
    calling this gets its own server), else the current folder. None when no running server
    serves that folder. ``toolsets`` (``"files,git"``) limits the relay to those tool sets. The
    argv never contains the server's URL or token.
    """
    folder = Path(root_dir or _in_process_root() or os.getcwd()).expanduser().resolve()
    info = find_server(folder, running_servers())
    if info is None:
        return None
    root = str(Path(info.get("root_dir") or folder).expanduser().resolve())
    return [*relay_launcher(), "stdio", "--root", root, *toolsets_arguments(toolsets)]
