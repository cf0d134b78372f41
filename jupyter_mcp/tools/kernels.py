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
    "description": "The notebook; default: the one focused in JupyterLab.",
}
TIMEOUT = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_TIMEOUT_MS,
    "default": DEFAULT_TIMEOUT_MS,
    "description": "Past it the kernel is interrupted; what ran is answered as 'timeout'.",
}
CELL_ID = {"type": "string", "description": "Wins over index."}
INDEX = {"type": "integer", "minimum": 0, "description": "The cell's 0-based index."}


def _executions(ctx: ToolContext) -> Executions:
    return ctx.services.executions


def _answer(execution: Execution) -> WithImages:
    return WithImages(execution.answer(), execution.images())


@tools.tool(
    "execute_notebook_cells",
    "Run a notebook's code cells in its own kernel (started if it has none) as the user "
    "would: counts advance, outputs go into the notebook as they come. Runs cellIds, or "
    "fromIndex..toIndex, or all; stops at the first error. Cancelling or timeoutMs interrupts "
    "the kernel. With background, answers an executionId at once for get_execution. Answers "
    "status (ok, error, timeout, interrupted, running) and each cell's outputs.",
    {
        "pathInProject": NOTEBOOK,
        "cellIds": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Run in notebook order.",
        },
        "fromIndex": {"type": "integer", "minimum": 0, "description": "0-based first cell."},
        "toIndex": {
            "type": "integer",
            "minimum": 0,
            "description": "0-based last cell, inclusive.",
        },
        "timeoutMs": TIMEOUT,
        "background": {"type": "boolean", "default": False},
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
    "A background run of execute_notebook_cells: its status and outputs so far, as "
    "execute_notebook_cells answers. waitMs waits up to that long for its end first.",
    {
        "executionId": {"type": "string"},
        "waitMs": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_MS, "default": 0},
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
    "Run code in a notebook's kernel, sharing its variables, without changing the notebook, "
    "its history or execution count. Timeouts and cancelling interrupt the kernel.",
    {
        "pathInProject": {**NOTEBOOK, "description": "Whose kernel; default: the focused one."},
        "code": {"type": "string"},
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
    "Kernels: list the server's, or start, restart (variables gone), interrupt, shutdown or "
    "change a notebook's kernel. start uses kernelName or the notebook's own; change starts "
    "a kernelName kernel for the notebook, shuts the old one down and names the new one in "
    "the notebook's metadata.",
    {
        "action": {
            "type": "string",
            "enum": ["list", "start", "restart", "interrupt", "shutdown", "change"],
        },
        "pathInProject": {
            **NOTEBOOK,
            "description": "The notebook; default the focused one (list: only its kernels).",
        },
        "kernelName": {"type": "string", "description": "A kernelspec name, e.g. python3."},
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
    metadata = await control.kernelspec_metadata(ctx, kernelName)
    document = await open_notebook(ctx, pathInProject or shown)

    def name_kernel(nb: dict[str, Any]) -> None:
        nb.setdefault("metadata", {})["kernelspec"] = metadata

    await document.change(name_kernel)
    return answer


@tools.tool(
    "get_kernel_variables",
    "The variables of a notebook's kernel: name, type, short repr, length or shape. "
    "Without names, all but modules, functions, classes and _names. Silent: the kernel's "
    "state, history and count stay as they were.",
    {
        "pathInProject": NOTEBOOK,
        "names": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Only these (an undefined one is an error).",
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
    "The kernel's completions at a position in a notebook cell: matches, and the start and "
    "end in the line of the text a match replaces. inspect adds the documentation of the "
    "name there. Runs no code.",
    {
        "pathInProject": NOTEBOOK,
        "cellId": CELL_ID,
        "index": INDEX,
        "line": {"type": "integer", "minimum": 0, "description": "0-based line in the cell."},
        "character": {"type": "integer", "minimum": 0, "description": "0-based."},
        "inspect": {"type": "boolean", "default": False},
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
