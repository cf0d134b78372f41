"""Running notebook cells and working with notebooks' kernels.

A notebook's kernel is the one of its Jupyter session (the kernel JupyterLab shows for it),
started with a session when it has none; the logic lives in :mod:`jupyter_mcp.kernels`.
"""

from __future__ import annotations

from typing import Any

from ..core.context import ToolContext, progress_reporter
from ..core.errors import ToolError
from ..core.registry import ToolSet, WithImages
from ..documents.cells import find_cell, source_of
from ..kernels import control, introspection
from ..kernels.runner import (
    DEFAULT_TIMEOUT_MS,
    MAX_TIMEOUT_MS,
    MAX_WAIT_MS,
    Execution,
    Executions,
    Step,
    select_cells,
)
from ..kernels.sessions import notebook_kernel
from ..lab.notebooks import notebook_path, open_notebook

tools = ToolSet("kernels")

NOTEBOOK = {
    "type": "string",
    "description": (
        "The notebook (.ipynb), relative to the project root (an absolute path inside it "
        "works). Default: the notebook focused in JupyterLab."
    ),
}
TIMEOUT = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_TIMEOUT_MS,
    "default": DEFAULT_TIMEOUT_MS,
    "description": (
        "Stop after this many milliseconds: the kernel is interrupted and what ran so far is "
        "answered with status 'timeout'."
    ),
}
CELL_ID = {
    "type": "string",
    "description": "The cell's id (from get_notebook_cells); wins over index.",
}
INDEX = {"type": "integer", "minimum": 0, "description": "The cell's 0-based index."}


def _executions(ctx: ToolContext) -> Executions:
    return ctx.services.executions


def _answer(execution: Execution) -> WithImages:
    return WithImages(execution.answer(), execution.images())


@tools.tool(
    "execute_notebook_cells",
    "Run code cells of a notebook in the notebook's own kernel (the one JupyterLab shows for "
    "it, started when it has none), as if the user ran them: the execution count advances, "
    "and the outputs appear in the notebook as they arrive (in the open JupyterLab window, or "
    "in the file). Runs the cells named by cellIds, or those from fromIndex to toIndex "
    "(inclusive), or all code cells; stops at the first cell that raises. Long runs send "
    "progress with the last output line; cancelling the call or reaching timeoutMs interrupts "
    "the kernel and answers what ran. With background, answers an executionId at once: "
    "follow it with get_execution. Returns {executionId, status (ok, error, timeout, "
    "interrupted, running), cells: [{cellId, executionCount, status, outputs}], notRun?, "
    "error?}; pictures come as image content.",
    {
        "pathInProject": NOTEBOOK,
        "cellIds": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Ids of the code cells to run (run in notebook order).",
        },
        "fromIndex": {"type": "integer", "minimum": 0, "description": "First cell to run."},
        "toIndex": {"type": "integer", "minimum": 0, "description": "Last cell to run."},
        "timeoutMs": TIMEOUT,
        "background": {
            "type": "boolean",
            "default": False,
            "description": "Answer an executionId at once instead of waiting for the run.",
        },
    },
    open_world=True,
    title="Run notebook cells",
    task_support=True,
)
async def execute_notebook_cells(
    ctx: ToolContext,
    pathInProject: str | None = None,
    cellIds: list[str] | None = None,
    fromIndex: int | None = None,
    toIndex: int | None = None,
    timeoutMs: int = DEFAULT_TIMEOUT_MS,
    background: bool = False,
) -> WithImages:
    """Run the chosen cells; wait for them unless ``background``."""
    document = await open_notebook(ctx, pathInProject)
    cells = select_cells(await document.snapshot(), document.shown, cellIds, fromIndex, toIndex)
    kernel = await notebook_kernel(ctx, document.path)
    execution = _executions(ctx).start(
        kernel,
        document.shown,
        [Step(c["id"], source_of(c)) for c in cells],
        document=document,
        timeout_ms=timeoutMs,
        reporter=None if background else progress_reporter.get(),
    )
    if not background:
        await _executions(ctx).run(execution)
    return _answer(execution)


@tools.tool(
    "get_execution",
    "The state of a run started by execute_notebook_cells: status (running, ok, error, "
    "timeout, interrupted) and each cell's outputs so far, as execute_notebook_cells answers. "
    "With waitMs, waits up to that long for the run to end first.",
    {
        "executionId": {"type": "string", "description": "The executionId of the run."},
        "waitMs": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_WAIT_MS,
            "default": 0,
            "description": "Wait up to this many milliseconds for the run to end.",
        },
    },
    required=["executionId"],
    read_only=True,
    title="Run state",
)
async def get_execution(ctx: ToolContext, executionId: str, waitMs: int = 0) -> WithImages:
    """The run ``executionId``, after waiting up to ``waitMs`` for it to end."""
    execution = _executions(ctx).get(executionId)
    if waitMs:
        await execution.wait(waitMs / 1000)
    return _answer(execution)


@tools.tool(
    "execute_code_in_kernel",
    "Run a snippet of code in a notebook's kernel without changing the notebook: it shares "
    "the kernel's variables (what it assigns stays defined), but is not recorded in the "
    "kernel's history and does not advance its execution count. Timeouts and cancelling "
    "interrupt the kernel, as for cells. Returns {status, outputs, error?}; pictures come as "
    "image content.",
    {
        "pathInProject": {**NOTEBOOK, "description": "The notebook whose kernel runs the code."},
        "code": {"type": "string", "description": "The code to run."},
        "timeoutMs": TIMEOUT,
    },
    required=["code"],
    open_world=True,
    title="Run code in a notebook's kernel",
    task_support=True,
)
async def execute_code_in_kernel(
    ctx: ToolContext,
    code: str,
    pathInProject: str | None = None,
    timeoutMs: int = DEFAULT_TIMEOUT_MS,
) -> WithImages:
    """Run ``code`` in the notebook's kernel and answer its outputs."""
    path, shown = await notebook_path(ctx, pathInProject)
    kernel = await notebook_kernel(ctx, path)
    execution = _executions(ctx).start(
        kernel,
        shown,
        [Step(None, code)],
        document=None,
        timeout_ms=timeoutMs,
        reporter=progress_reporter.get(),
    )
    await _executions(ctx).run(execution)
    value = execution.answer()
    cell = value["cells"][0] if value["cells"] else {"outputs": []}
    answer: dict[str, Any] = {"status": value["status"], "outputs": cell["outputs"]}
    for key in ("outputsOmitted", "error"):
        if key in cell or key in value:
            answer[key] = cell.get(key, value.get(key))
    return WithImages(answer, execution.images())


@tools.tool(
    "kernel_action",
    "List the server's kernels, or start, restart, interrupt, shut down or change a "
    "notebook's kernel. list: [{kernelId, name, state, executionCount, lastActivity, "
    "notebooks}] (with pathInProject, only that notebook's). start: the notebook's kernel "
    "(kernelName, or the notebook's own, for a new one). restart: same session, variables "
    "gone. interrupt: stops the running cell. "
    "shutdown: ends the kernel and its session. change: a new kernel of kernelName for the "
    "notebook (the old one is shut down, the notebook's metadata names the new one). Others "
    "answer {kernelId, name, state}.",
    {
        "action": {
            "type": "string",
            "enum": ["list", "start", "restart", "interrupt", "shutdown", "change"],
            "description": "What to do.",
        },
        "pathInProject": {
            **NOTEBOOK,
            "description": (
                "The notebook whose kernel to act on (list: optional, narrows the list to it)."
            ),
        },
        "kernelName": {
            "type": "string",
            "description": "A kernelspec name, such as python3 (start, change).",
        },
    },
    required=["action"],
    open_world=True,
    title="Kernel action",
)
async def kernel_action(
    ctx: ToolContext,
    action: str,
    pathInProject: str | None = None,
    kernelName: str | None = None,
) -> Any:
    """Do ``action`` on the server's kernels."""
    clients = _executions(ctx).clients
    if action == "list":
        kernels = await control.list_kernels(ctx, clients)
        if not pathInProject:
            return kernels
        # A notebook named on list narrows it to that notebook's kernels (and is checked).
        _, shown = await notebook_path(ctx, pathInProject)
        return [k for k in kernels if shown in k["notebooks"]]
    path, shown = await notebook_path(ctx, pathInProject)
    if action == "start":
        return await control.start(ctx, path, shown, kernelName)
    if action == "restart":
        return await control.restart(ctx, clients, path, shown)
    if action == "interrupt":
        return await control.interrupt(ctx, path, shown)
    if action == "shutdown":
        return await control.shutdown(ctx, clients, path, shown)
    if kernelName is None:
        raise ToolError("kernel_action change needs kernelName (kernel_action list shows names)")
    answer = await control.change(ctx, clients, path, shown, kernelName)
    metadata = control.kernelspec_metadata(ctx, kernelName)
    document = await open_notebook(ctx, pathInProject or shown)

    def name_kernel(nb: dict[str, Any]) -> None:
        nb.setdefault("metadata", {})["kernelspec"] = metadata

    await document.change(name_kernel)
    return answer


@tools.tool(
    "get_kernel_variables",
    "The variables defined in a notebook's kernel: name, type, a short repr (value), and "
    "length or shape when they have one. Without names: every variable but modules, functions, "
    "classes and names starting with an underscore. Asks the kernel silently: its namespace, "
    "history and execution count stay as they were.",
    {
        "pathInProject": NOTEBOOK,
        "names": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Only these variables (any kind); an undefined one is an error.",
        },
    },
    read_only=True,
    title="Kernel variables",
)
async def get_kernel_variables(
    ctx: ToolContext, pathInProject: str | None = None, names: list[str] | None = None
) -> list[dict[str, Any]]:
    """The variables of the notebook's kernel."""
    path, shown = await notebook_path(ctx, pathInProject)
    kernel = await notebook_kernel(ctx, path)
    return await introspection.variables(_executions(ctx).clients, kernel.kernel_id, shown, names)


@tools.tool(
    "get_kernel_completions",
    "The kernel's own completions at a cursor position in a notebook cell (line and character "
    "0-based within the cell's source): {matches, start, end} where start/end are the "
    "offsets in that line of the text a match replaces. With inspect, also the kernel's "
    "documentation of the name at the cursor. Runs no code.",
    {
        "pathInProject": NOTEBOOK,
        "cellId": CELL_ID,
        "index": INDEX,
        "line": {"type": "integer", "minimum": 0, "description": "0-based line in the cell."},
        "character": {
            "type": "integer",
            "minimum": 0,
            "description": "0-based character in the line.",
        },
        "inspect": {
            "type": "boolean",
            "default": False,
            "description": "Also answer the documentation of the name at the cursor.",
        },
    },
    required=["line", "character"],
    read_only=True,
    title="Kernel completions",
)
async def get_kernel_completions(
    ctx: ToolContext,
    line: int,
    character: int,
    pathInProject: str | None = None,
    cellId: str | None = None,
    index: int | None = None,
    inspect: bool = False,
) -> dict[str, Any]:
    """Completions at ``line``/``character`` of the cell."""
    document = await open_notebook(ctx, pathInProject)
    nb = await document.snapshot()
    cell = nb["cells"][find_cell(nb, document.shown, cellId, index)]
    kernel = await notebook_kernel(ctx, document.path)
    return await introspection.completions(
        _executions(ctx).clients,
        kernel.kernel_id,
        document.shown,
        source_of(cell),
        line,
        character,
        where=f"cell {cell.get('id')}",
        inspect=inspect,
    )
