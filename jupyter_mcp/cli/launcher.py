"""The command that starts the stdio bridge for a server: ``jupyter_mcp.stdio_command()``.

A plugin (or any program) that launches or configures an agent passes this argv on: running it
relays MCP over stdin/stdout to the Jupyter server that serves the project. The bridge finds
the server, its URL and its token through Jupyter's runtime files when it starts, so the argv
itself never holds the URL or the token.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def _in_process_root() -> str | None:
    """The root of the Jupyter server running in this process, if any."""
    if "jupyter_server.serverapp" not in sys.modules:
        return None
    from jupyter_server.serverapp import ServerApp

    if not ServerApp.initialized():
        return None
    return str(ServerApp.instance().root_dir) or None


def bridge_launcher() -> list[str]:
    """How to start ``jupyter-mcp`` of this environment: its console script, else ``-m``."""
    scripts = Path(sys.executable).parent
    for name in ("jupyter-mcp", "jupyter-mcp.exe"):
        script = scripts / name
        if script.is_file() and os.access(script, os.X_OK):
            return [str(script)]
    return [sys.executable, "-m", "jupyter_mcp.cli"]


def stdio_command(root_dir: str | os.PathLike[str] | None = None) -> list[str] | None:
    """The argv of the stdio bridge for the server that serves ``root_dir``, or None.

    ``root_dir`` defaults to the root of the Jupyter server running in this process (a plugin
    calling this gets its own server), else the current folder. None when no running server
    serves that folder. The argv never contains the server's URL or token.
    """
    from .relay import find_server, running_servers

    folder = Path(root_dir or _in_process_root() or os.getcwd()).expanduser().resolve()
    info = find_server(folder, running_servers())
    if info is None:
        return None
    root = str(Path(info.get("root_dir") or folder).expanduser().resolve())
    return [*bridge_launcher(), "stdio", "--root", root]


def print_stdio_command(args: argparse.Namespace) -> int:
    """``jupyter mcp stdio-command``: print the argv as a JSON array (exit 1 without a server)."""
    root = args.root or os.getcwd()
    argv = stdio_command(root)
    if argv is None:
        print(
            f"jupyter-mcp: no running Jupyter server serves {Path(root).resolve()}",
            file=sys.stderr,
        )
        return 1
    print(json.dumps(argv))
    return 0


def add_stdio_command_parser(commands: argparse._SubParsersAction) -> None:
    """Add the ``stdio-command`` subcommand to the ``jupyter-mcp`` command line."""
    parser = commands.add_parser(
        "stdio-command",
        help="Print, as a JSON array, the command that starts the stdio bridge for the running "
        "server that serves this folder (no URL or token in it).",
    )
    parser.add_argument(
        "--root", help="The folder whose server to use (default: the current folder)."
    )
    parser.set_defaults(handler=print_stdio_command)
