"""Which notebook a call means, and its document.

There is no "current notebook" kept between calls: each call names its notebook with
``pathInProject``, or means the notebook focused in JupyterLab (the active document of the
window focused last) when it names none, so agents on one server never act on each other's.
"""

from __future__ import annotations

import asyncio

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..documents.notebook_document import NotebookDocument

NO_FOCUSED_NOTEBOOK = (
    "No pathInProject was given and no notebook is focused in JupyterLab; give the "
    "notebook's pathInProject (relative to the project root)"
)


def focused_notebook(ctx: ToolContext) -> str | None:
    """The path (relative to the root) of the notebook focused in JupyterLab, or None."""
    bridge = ctx.services.editor  # None outside a server
    window = bridge.current() if bridge is not None else None
    active = window.active if window is not None else None
    if active is None or active.type != "notebook":
        return None
    return active.path


async def open_notebook(ctx: ToolContext, path_in_project: str | None) -> NotebookDocument:
    """The document of the notebook ``path_in_project`` names (default: the focused one).

    Raises :class:`ToolError` when none is named or focused, or when the path is outside the
    project, missing, not a notebook or not valid notebook JSON.
    """
    if not path_in_project:
        path_in_project = focused_notebook(ctx)
        if path_in_project is None:
            raise ToolError(NO_FOCUSED_NOTEBOOK)
    path = await asyncio.to_thread(ctx.resolve, path_in_project)
    notebooks = ctx.services.notebooks
    if notebooks is None:
        raise ToolError("This server has no notebook documents (its services were not built)")
    return await notebooks.open(path, ctx.relative(path))
