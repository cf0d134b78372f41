"""Debug tools: line breakpoints kept by the server.

Breakpoints live in the server's :class:`~jupyter_mcp.execution.breakpoints.BreakpointStore`
(``ctx.services.breakpoints``); lines are 1-based and, for notebooks, lines of the
percent-format text view every text tool uses.
"""

from __future__ import annotations

from typing import Any

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.registry import ToolSet
from ..documents.files import read_text

tools = ToolSet("debug")


@tools.tool(
    "toggle_debugger_breakpoint",
    "Toggle a debugger breakpoint at the specified line (1-based) of a project file. For a "
    "notebook, the line is a line of its percent-format text view. Returns 'Breakpoint added' "
    "or 'Breakpoint removed'.",
    {
        "pathInProject": {
            "type": "string",
            "description": "The relative path to the file within the project.",
        },
        "line": {
            "type": "integer",
            "minimum": 1,
            "description": "The line number where to toggle the breakpoint (1-based).",
        },
    },
    required=["pathInProject", "line"],
    title="Toggle breakpoint",
    destructive=False,  # adds, never overwrites
)
def toggle_debugger_breakpoint(ctx: ToolContext, pathInProject: str, line: int) -> str:
    """Add or remove the breakpoint at ``pathInProject``:``line``."""
    store = ctx.services.breakpoints
    path = ctx.resolve(pathInProject)
    # Removing an existing breakpoint is always allowed, even if the file shrank or vanished.
    if not store.has(path, line):
        text = read_text(ctx, path, pathInProject)  # refuses missing, binary and huge files
        count = len(text.splitlines())
        if line > count:
            raise ToolError(
                f"Line {line} is out of range: {pathInProject} has {count} "
                f"line{'' if count == 1 else 's'}"
            )
    try:
        added = store.toggle(path, line)
    except OSError as e:
        raise ToolError(f"Could not save breakpoints to {store.file}: {e}") from e
    return "Breakpoint added" if added else "Breakpoint removed"


@tools.tool(
    "get_debugger_breakpoints",
    "Get all line breakpoints set in the project: a JSON array of {path (absolute), line "
    "(1-based)}.",
    read_only=True,
    idempotent=True,
    title="List breakpoints",
)
def get_debugger_breakpoints(ctx: ToolContext) -> list[dict[str, Any]]:
    """Every breakpoint of the project, sorted by path and line."""
    return ctx.services.breakpoints.list()
