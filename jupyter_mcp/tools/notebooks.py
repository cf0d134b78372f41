"""Notebook tools: read a notebook as cells with their outputs, and edit its cells.

Each call names its notebook (``pathInProject``; default: the notebook focused in JupyterLab)
and its cells by id (an index is accepted, the id wins). The edit runs on the notebook's
document: the open JupyterLab window's or the shared one when the notebook is open (visible at
once, undoable), else its file; resolving the cell and changing it happen under the notebook's
lock, the one the file tools take.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.registry import ToolSet, WithImages, WithViewData
from ..documents import cells as ops
from ..documents.notebook_document import NotebookDocument
from ..lab.notebooks import (
    cell_images,
    cell_object,
    notebook_cells,
    notebook_version,
    open_notebook,
)

tools = ToolSet("notebooks")

PATH = {
    "type": "string",
    "description": "The notebook; default: the one focused in JupyterLab.",
}
CELL_ID = {"type": "string", "description": "Wins over index."}
INDEX = {"type": "integer", "minimum": 0, "description": "The cell's 0-based index."}
EXPECTED = {
    "type": "string",
    "description": (
        "The source as you last read it (or 'sha256:' + its hex SHA-256): if the cell changed "
        "since, nothing is changed and the error gives the current source."
    ),
}


async def _change(
    doc: NotebookDocument, edit: Callable[[dict[str, Any]], dict[str, Any]]
) -> dict[str, Any]:
    """Apply a cell edit; the result says when it upgraded the notebook's file."""
    result = await doc.change(edit)
    return {**result, **doc.notes}


@tools.tool(
    "get_notebook_cells",
    "A notebook's cells (id, index, type, source, execution count, outputs with long text "
    "cut, pictures as images) and its kernel; unsaved edits in JupyterLab included.",
    {
        "pathInProject": PATH,
        "start": {"type": "integer", "minimum": 0, "default": 0, "description": "0-based."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 50},
        "includeOutputs": {"type": "boolean", "default": True},
    },
    read_only=True,
    idempotent=True,
    title="Read notebook cells",
    result_version=notebook_version,
)
async def get_notebook_cells(
    ctx: ToolContext,
    pathInProject: str | None = None,
    start: int = 0,
    limit: int = 50,
    includeOutputs: bool = True,
) -> WithImages:
    """A page of the notebook's cells."""
    doc = await open_notebook(ctx, pathInProject)
    nb = await doc.snapshot()
    found, page = await notebook_cells(
        ctx, doc, nb, start=start, limit=limit, include_outputs=includeOutputs
    )
    return WithImages(found, cell_images(page) if includeOutputs else [])


@tools.tool(
    "get_notebook_cell",
    "One notebook cell in full: source, execution count, every output uncut.",
    {"pathInProject": PATH, "cellId": CELL_ID, "index": INDEX},
    read_only=True,
    idempotent=True,
    title="Read notebook cell",
    result_version=notebook_version,
)
async def get_notebook_cell(
    ctx: ToolContext,
    pathInProject: str | None = None,
    cellId: str | None = None,
    index: int | None = None,
) -> WithViewData:
    """One cell with its outputs."""
    doc = await open_notebook(ctx, pathInProject)
    nb = await doc.snapshot()
    position = ops.find_cell(nb, doc.shown, cellId, index)
    cell = nb["cells"][position]
    shown = doc.shown
    answer = WithImages(cell_object(cell, position, shown=shown), cell_images([cell]))
    # Not the document: a shared one holds its room open while it lives (lab/rooms.py), and
    # the answer (with this) may be kept for its later result windows.
    return WithViewData(answer, lambda: _cell_view_data(shown, cell))


def _cell_view_data(shown: str, cell: dict[str, Any]) -> dict[str, Any]:
    """One cell's outputs as the notebook keeps them (rich data included), for a view."""
    return {
        "path": shown,
        "cells": [
            {
                "cellId": cell.get("id"),
                "cellType": cell.get("cell_type"),
                "executionCount": cell.get("execution_count"),
                "outputs": list(cell.get("outputs") or []),
            }
        ],
    }


@tools.tool(
    "insert_notebook_cell",
    "Insert a cell into a notebook at index, after afterCellId, or at the end; answers its "
    "id and index.",
    {
        "pathInProject": PATH,
        "source": {"type": "string"},
        "cellType": {"type": "string", "enum": list(ops.CELL_TYPES), "default": "code"},
        "index": {"type": "integer", "minimum": 0, "description": "0-based."},
        "afterCellId": {"type": "string"},
    },
    required=["source"],
    destructive=False,
    title="Insert notebook cell",
)
async def insert_notebook_cell(
    ctx: ToolContext,
    source: str,
    pathInProject: str | None = None,
    cellType: str = "code",
    index: int | None = None,
    afterCellId: str | None = None,
) -> dict[str, Any]:
    """Insert one cell."""
    doc = await open_notebook(ctx, pathInProject)
    return await _change(
        doc, lambda nb: ops.insert_cell(nb, doc.shown, source, cellType, index, afterCellId)
    )


@tools.tool(
    "edit_notebook_cell",
    "Edit a notebook cell: a new source, or searchText replaced by replaceText (it must occur "
    "once, or replaceAll), and/or a new cellType. Answers a unified diff.",
    {
        "pathInProject": PATH,
        "cellId": CELL_ID,
        "index": INDEX,
        "source": {"type": "string", "description": "The whole new source."},
        "searchText": {"type": "string"},
        "replaceText": {"type": "string"},
        "replaceAll": {"type": "boolean", "default": False},
        "cellType": {"type": "string", "enum": list(ops.CELL_TYPES)},
        "expectedSource": EXPECTED,
    },
    title="Edit notebook cell",
)
async def edit_notebook_cell(
    ctx: ToolContext,
    pathInProject: str | None = None,
    cellId: str | None = None,
    index: int | None = None,
    source: str | None = None,
    searchText: str | None = None,
    replaceText: str | None = None,
    replaceAll: bool = False,
    cellType: str | None = None,
    expectedSource: str | None = None,
) -> WithViewData:
    """Edit one cell's source or type."""
    doc = await open_notebook(ctx, pathInProject)
    texts: dict[str, str] = {}

    def edit(nb: dict[str, Any]) -> dict[str, Any]:
        before = _source_at(nb, doc.shown, cellId, index)
        answer = ops.edit_cell(
            nb,
            doc.shown,
            cell_id=cellId,
            index=index,
            source=source,
            search_text=searchText,
            replace_text=replaceText,
            replace_all=replaceAll,
            cell_type=cellType,
            expected_source=expectedSource,
        )
        if before is not None:
            texts.update(before=before, after=ops.source_of(nb["cells"][answer["index"]]))
        return answer

    answer = await _change(doc, edit)
    where = f"{doc.shown} · cell {answer.get('cellId')}"
    return WithViewData(answer, lambda: {"files": [{"path": where, **texts}] if texts else []})


def _source_at(
    nb: dict[str, Any], shown: str, cell_id: str | None, index: int | None
) -> str | None:
    """The source of the cell an edit names, or None when it names none (the edit says why)."""
    try:
        return ops.source_of(nb["cells"][ops.find_cell(nb, shown, cell_id, index)])
    except ToolError:
        return None


@tools.tool(
    "delete_notebook_cells",
    "Delete a notebook's cells by id; if one id is unknown, none is deleted.",
    {
        "pathInProject": PATH,
        # An empty list is refused by the tool itself, with the other fields checked first.
        "cellIds": {"type": "array", "items": {"type": "string"}, "description": "At least one."},
    },
    required=["cellIds"],
    title="Delete notebook cells",
)
async def delete_notebook_cells(
    ctx: ToolContext, cellIds: list[str], pathInProject: str | None = None
) -> dict[str, Any]:
    """Delete cells."""
    doc = await open_notebook(ctx, pathInProject)
    return await _change(doc, lambda nb: ops.delete_cells(nb, doc.shown, cellIds))


@tools.tool(
    "move_notebook_cell",
    "Move a notebook cell to end up at toIndex.",
    {
        "pathInProject": PATH,
        "cellId": CELL_ID,
        "index": INDEX,
        "toIndex": {"type": "integer", "minimum": 0, "description": "0-based, after the move."},
    },
    required=["toIndex"],
    destructive=False,
    idempotent=True,
    title="Move notebook cell",
)
async def move_notebook_cell(
    ctx: ToolContext,
    toIndex: int,
    pathInProject: str | None = None,
    cellId: str | None = None,
    index: int | None = None,
) -> dict[str, Any]:
    """Move one cell."""
    doc = await open_notebook(ctx, pathInProject)
    return await _change(doc, lambda nb: ops.move_cell(nb, doc.shown, toIndex, cellId, index))


@tools.tool(
    "clear_notebook_outputs",
    "Clear the outputs and execution counts of a notebook's cellIds, or of all its cells.",
    {
        "pathInProject": PATH,
        "cellIds": {"type": "array", "items": {"type": "string"}},
    },
    idempotent=True,
    title="Clear notebook outputs",
)
async def clear_notebook_outputs(
    ctx: ToolContext, pathInProject: str | None = None, cellIds: list[str] | None = None
) -> dict[str, Any]:
    """Clear outputs."""
    doc = await open_notebook(ctx, pathInProject)
    return await _change(doc, lambda nb: ops.clear_outputs(nb, doc.shown, cellIds))
