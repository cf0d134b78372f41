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
    "Add or remove a breakpoint at a line of a project file (of a notebook's percent-format "
    "text). Answers 'Breakpoint added' or 'Breakpoint removed'.",
    {
        "pathInProject": {
            "type": "string",
            "description": "File path relative to the project root.",
        },
        "line": {"type": "integer", "minimum": 1, "description": "1-based."},
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
    "Every breakpoint of the project: [{path (absolute), line (1-based)}].",
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
    "Debug a notebook's code with its kernel's debugger (ipykernel's, xeus-python's), shared "
    "with JupyterLab's when the user has it on. start: debugger on, with the breakpoints of "
    "toggle_debugger_breakpoint (in the notebook and the .py files it imports). run_cell "
    "answers when the cell stops (state 'stopped', where: {cellId, line 0-based in the cell, "
    "viewLine 1-based}, frameId), finishes ('finished', outputs) or runs past timeoutMs "
    "('running'); so do continue, step_over, step_into, step_out, pause. stack: frames. "
    "variables: a frame's locals, or a variablesReference's children. evaluate: expression in "
    "a frame. state: on or off, running or where stopped. stop: ends it, nothing stays paused.",
    {
        "action": {"type": "string", "enum": _DEBUG_ACTIONS},
        "pathInProject": {
            "type": "string",
            "description": "The notebook; default: the one focused in JupyterLab.",
        },
        "cellId": {"type": "string", "description": "run_cell: the cell."},
        "index": {
            "type": "integer",
            "minimum": 0,
            "description": "run_cell: the cell's 0-based index (cellId wins).",
        },
        "frameId": {
            "type": "integer",
            "description": "variables, evaluate: a frame from stack; default the innermost.",
        },
        "variablesReference": {
            "type": "integer",
            "minimum": 1,
            "description": "variables: expand this instead of a frame.",
        },
        "expression": {"type": "string", "description": "evaluate: Python."},
        "start": {
            "type": "integer",
            "minimum": 0,
            "default": 0,
            "description": "stack, variables: 0-based first item.",
        },
        "count": {
            "type": "integer",
            "minimum": 1,
            "maximum": 200,
            "default": 50,
            "description": "stack, variables: items at most.",
        },
        "exceptions": {
            "type": "string",
            "enum": list(EXCEPTION_FILTERS),
            "description": "start: also stop on exceptions raised, or uncaught ones; default none.",
        },
        "timeoutMs": {
            "type": "integer",
            "minimum": 1,
            "maximum": 600000,
            "default": 30000,
            "description": "run_cell and moves: wait this long to stop or finish.",
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
