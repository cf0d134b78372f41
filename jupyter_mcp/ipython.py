"""The IDE in the notebook: ``%load_ext jupyter_mcp``, the ``%mcp`` magics and ``ide``.

In a kernel that a Jupyter server with jupyter_mcp started, ``%load_ext jupyter_mcp`` finds
that server by itself (no token typed or shown; see :mod:`jupyter_mcp.ide.server`) and gives
the notebook its tools::

    %mcp tools                                    # the tools, by tool set
    %mcp search_in_files_content searchText=TODO  # a call, its answer shown and returned
    from jupyter_mcp.ipython import ide
    ide.get_file_text_by_path(pathInProject="README.md")

Answers are Python data (``list``, ``dict``, ``str``) that show themselves as the MCP Apps
views show them; a failing tool raises :class:`ToolError` with its message. Importing this
module is cheap: the MCP client and the server's code are not imported until a call needs them.
The code lives in :mod:`jupyter_mcp.ide`; this module is what notebooks import.
"""

from __future__ import annotations

from typing import Any

from .ide.api import IDE, the_ide
from .ide.client import ToolError
from .ide.server import NoServerError

# ``ide`` too, made on first use (see __getattr__).
__all__ = ["IDE", "NoServerError", "ToolError", "load_ipython_extension"]


def __getattr__(name: str) -> Any:
    # ``from jupyter_mcp.ipython import ide``: the kernel's IDE, connected on first import.
    if name == "ide":
        return the_ide()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _show_tool_error(
    shell: Any, etype: type[BaseException], value: BaseException, tb: Any, tb_offset: Any = None
) -> list[str]:
    """A failed tool as its message, not as the client library's traceback."""
    lines = [f"\x1b[0;31m{etype.__name__}\x1b[0m: {value}"]
    shell._showtraceback(etype, value, lines)
    return lines


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jupyter_mcp``: the magics, ``ide`` in the namespace, terse tool errors, and
    the connection to the server (or what to do when there is none)."""
    from .ide.magics import MCPMagics

    ide = the_ide(connect=False)
    ipython.register_magics(MCPMagics(ipython, ide))
    if "ide" not in ipython.user_ns:
        ipython.user_ns["ide"] = ide
    # IPython keeps one handler of custom exceptions; another extension's stays.
    if not ipython.custom_exceptions or ipython.custom_exceptions == (ToolError, NoServerError):
        ipython.set_custom_exc((ToolError, NoServerError), _show_tool_error)
    try:
        address = ide.connect()
    except NoServerError as e:
        print(f"jupyter-mcp: {e}")
        return
    count = len(ide._tools)
    print(
        f"jupyter-mcp: connected to {address.describe()}, {count} tools. %mcp tools lists "
        "them, %mcp TOOL key=value … calls one, ide.TOOL(…) does in Python."
    )


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext jupyter_mcp``: the session ends; the magics stay until the kernel does."""
    the_ide(connect=False).close()
    if ipython.custom_exceptions == (ToolError, NoServerError):
        ipython.set_custom_exc((), None)
