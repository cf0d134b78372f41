"""jupyter-mcp-ide: a Jupyter server as an IDE that AI agents drive over MCP."""

from __future__ import annotations

from typing import Any

from .core.version import __version__ as __version__


def stdio_command(root_dir: Any = None, *, toolsets: str | None = None) -> list[str] | None:
    """The argv of the stdio relay for the running server, serving only ``toolsets``
    (``"files,git"``) when given (see :mod:`jupyter_mcp.cli.launcher`)."""
    # Imported on call, so that ``import jupyter_mcp`` stays as cheap as its version.
    from .cli.launcher import stdio_command as _stdio_command

    return _stdio_command(root_dir, toolsets=toolsets)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jupyter_mcp``: the tools in the notebook (see :mod:`jupyter_mcp.ipython`)."""
    from .ipython import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext jupyter_mcp``."""
    from .ipython import unload_ipython_extension as unload

    unload(ipython)


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from .app import JupyterMCP

    return [{"module": "jupyter_mcp.app", "app": JupyterMCP}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "jupyter-mcp"}]
