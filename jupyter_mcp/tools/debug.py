"""Debug tools: line breakpoints kept by the server, and a debug session on a notebook's kernel.

Breakpoints live in the server's :class:`~jupyter_mcp.execution.breakpoints.BreakpointStore`
(``ctx.services.breakpoints``); lines are 1-based and, for notebooks, lines of the
percent-format text view every text tool uses. ``debug_session`` drives the notebook kernel's
own debugger (:mod:`jupyter_mcp.kernels.debugger`) and sets those breakpoints in its cells.
"""

from __future__ import annotations

from typing import Any

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.registry import ToolSet, WithImages
from ..documents.cells import find_cell
from ..documents.files import read_text
from ..kernels.debugger import EXCEPTION_FILTERS
from ..lab.notebooks import open_notebook

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


_DEBUG_ACTIONS = [
    "start",
    "stop",
    "run_cell",
    "state",
    "stack",
    "variables",
    "evaluate",
    "continue",
    "step_over",
    "step_into",
    "step_out",
    "pause",
]


@tools.tool(
    "debug_session",
    "Debug a notebook's code in its kernel (ipykernel's debugger, the one JupyterLab's debugger "
    "uses): stop at breakpoints, read the stack and variables, evaluate, step. Actions: "
    "'start' turns the debugger on for the notebook's kernel and sets the notebook's breakpoints "
    "(those of toggle_debugger_breakpoint: lines of its percent-format view, and lines of the "
    "project's .py files it imports) — if the user has "
    "JupyterLab's debugger on for that kernel, the session shares it; 'exceptions' "
    "('none'/'raised'/'uncaught') also stops on exceptions. 'run_cell' (cellId or index) runs a "
    "cell under the debugger and answers when it stops ({'state': 'stopped', 'where': {cellId, "
    "line (0-based in the cell), viewLine (1-based, percent view), code, function, reason: "
    "breakpoint/step/exception/pause}, 'frameId'}), finishes ({'state': 'finished', 'status', "
    "'outputs'}) or is still running after timeoutMs ({'state': 'running'}). 'continue', "
    "'step_over', 'step_into', 'step_out', 'pause' move and answer the same way. 'stack' lists "
    "frames (frameId, function, cellId/line or file/fileLine); 'variables' gives a frame's scopes "
    "and its locals (frameId, default the innermost), or the children of a variablesReference, "
    "paged by start/count, values cut to 300 characters; 'evaluate' evaluates 'expression' in a "
    "frame. 'state' says whether a session is on ('session': 'on'/'off'), whether its cell runs "
    "or is stopped and where, and which breakpoints the debugger verified. 'stop' ends the "
    "session; nothing stays paused.",
    {
        "action": {"type": "string", "enum": _DEBUG_ACTIONS, "description": "What to do."},
        "pathInProject": {
            "type": "string",
            "description": (
                "The notebook (.ipynb), relative to the project root; default: the notebook "
                "focused in JupyterLab."
            ),
        },
        "cellId": {"type": "string", "description": "run_cell: the cell to run."},
        "index": {
            "type": "integer",
            "minimum": 0,
            "description": "run_cell: the cell to run by 0-based index (cellId wins).",
        },
        "frameId": {
            "type": "integer",
            "description": "variables, evaluate: the frame (from 'stack'); default the innermost.",
        },
        "variablesReference": {
            "type": "integer",
            "minimum": 1,
            "description": "variables: expand this variable (or scope) instead of a frame.",
        },
        "expression": {"type": "string", "description": "evaluate: a Python expression."},
        "start": {
            "type": "integer",
            "minimum": 0,
            "default": 0,
            "description": "stack, variables: the first item to return.",
        },
        "count": {
            "type": "integer",
            "minimum": 1,
            "maximum": 200,
            "default": 50,
            "description": "stack, variables: how many items to return.",
        },
        "exceptions": {
            "type": "string",
            "enum": list(EXCEPTION_FILTERS),
            "description": (
                "start: stop on every exception raised ('raised'), on those the notebook's "
                "code does not catch ('uncaught'), or on none (default)."
            ),
        },
        "timeoutMs": {
            "type": "integer",
            "minimum": 1,
            "maximum": 600000,
            "default": 30000,
            "description": "run_cell and moves: how long to wait for the code to stop or finish.",
        },
    },
    required=["action"],
    title="Debug session",
    destructive=True,  # runs code in the user's kernel
    task_support=True,
)
async def debug_session(
    ctx: ToolContext,
    action: str,
    pathInProject: str | None = None,
    cellId: str | None = None,
    index: int | None = None,
    frameId: int | None = None,
    variablesReference: int | None = None,
    expression: str | None = None,
    start: int = 0,
    count: int = 50,
    exceptions: str | None = None,
    timeoutMs: int = 30000,
) -> Any:
    """One action of the agent's debug session on the notebook's kernel."""
    document = await open_notebook(ctx, pathInProject)  # refuses what is not a notebook
    path, shown = document.path, document.shown
    debuggers = ctx.services.debugger
    timeout = timeoutMs / 1000
    if action == "start":
        return await debuggers.start(ctx, path, shown, exceptions)
    if action == "stop":
        return await debuggers.stop(ctx, path, shown)
    if action == "state":
        return await debuggers.state(path, shown)
    session = await debuggers.session(path, shown)
    if action == "stack":
        frames = await session.frames()
        page = frames[start : start + count]
        return {
            "frames": [await session.frame_answer(f) for f in page],
            "start": start,
            "total": len(frames),
            "more": start + len(page) < len(frames),
        }
    if action == "variables":
        return await session.variables(frameId, variablesReference, start, count)
    if action == "evaluate":
        if not expression:
            raise ToolError("evaluate needs an 'expression'")
        return await session.evaluate(expression, frameId)
    if action == "pause":
        return await session.pause(timeout)
    async with session.action_lock:
        if action == "run_cell":
            nb, _ = await session.notebook()
            if cellId is None and index is None:
                raise ToolError("run_cell needs the cell: 'cellId' or 'index'")
            cell = nb.cells[find_cell(nb, shown, cellId, index)]
            if cell.cell_type != "code":
                raise ToolError(
                    f"Cell {cell.get('id')} of {shown} is a {cell.cell_type} cell; only code runs"
                )
            answer = await session.run_cell(cell, timeout)
        else:
            answer = await session.move(action, timeout)
    run = session.run
    if answer.get("state") == "finished" and run is not None and run.done:
        pictures = run.images()
        if pictures:
            return WithImages(answer, pictures)
    return answer
