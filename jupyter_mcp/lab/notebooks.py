"""Which notebook a call means, and its document.

There is no "current notebook" kept between calls: each call names its notebook with
``pathInProject``, or means the notebook focused in JupyterLab (the active document of the
window focused last) when it names none, so agents on one server never act on each other's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.registry import Image
from ..core.uris import format_uri
from ..documents.cells import source_of
from ..documents.facts import is_notebook
from ..documents.notebook_document import NotebookDocument
from ..kernels import managers
from ..kernels.outputs import images_of, output_object
from ..kernels.sessions import find_notebook_kernel

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


async def notebook_path(ctx: ToolContext, path_in_project: str | None) -> tuple[Path, str]:
    """The real path of the notebook ``path_in_project`` names (default: the focused one) and
    how answers name it, for calls that need its kernel but not its cells.

    Raises :class:`ToolError` when none is named or focused, or when the path is outside the
    project, missing or not a notebook.
    """
    if not path_in_project:
        path_in_project = focused_notebook(ctx)
        if path_in_project is None:
            raise ToolError(NO_FOCUSED_NOTEBOOK)
    path = await asyncio.to_thread(ctx.resolve, path_in_project)
    shown = ctx.relative(path)
    if not is_notebook(path):
        raise ToolError(f"{shown} is not a notebook (.ipynb)")
    if not await asyncio.to_thread(path.is_file):
        raise ToolError(f"Notebook not found: {shown}")
    return path, shown


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


async def notebook_version(ctx: ToolContext, arguments: dict[str, Any]) -> Hashable | None:
    """What a read of the notebook ``arguments`` name is computed from: which document it is
    and its version (see ``Tool.result_version``); None when its changes cannot be told.

    The kernel an answer names is not part of it: later windows of one caller give the answer
    as it was at the first, which is consistent, where recomputing it could shift the text.
    """
    doc = await open_notebook(ctx, arguments.get("pathInProject"))
    version = doc.version()
    return None if version is None else (doc.location, str(doc.path), version)


#: Characters of one output's text in a listing of cells, and in one cell read in full.
LISTING_TEXT_LIMIT = 1000
CELL_TEXT_LIMIT = 20000


def image_uri(shown: str, cell_id: str, index: int) -> str:
    """The resource URI of output ``index`` (0-based) of a cell, where its picture is read."""
    return format_uri("output", shown, cell_id, index)


def cell_object(
    cell: dict[str, Any],
    index: int,
    *,
    shown: str,
    include_outputs: bool = True,
    limit: int = CELL_TEXT_LIMIT,
) -> dict[str, Any]:
    """A cell as the notebook tools answer it, outputs as output objects."""
    found: dict[str, Any] = {
        "cellId": cell.get("id"),
        "index": index,
        "cellType": cell.get("cell_type"),
        "source": source_of(cell),
        "executionCount": cell.get("execution_count"),
    }
    if include_outputs:
        outputs = []
        for n, output in enumerate(cell.get("outputs") or []):
            obj = output_object(output, limit=limit)
            if images_of([output]):
                obj["imageUri"] = image_uri(shown, str(cell.get("id")), n)
            outputs.append(obj)
        found["outputs"] = outputs
    return found


async def notebook_cells(
    ctx: ToolContext,
    doc: NotebookDocument,
    nb: dict[str, Any],
    *,
    start: int = 0,
    limit: int | None = None,
    include_outputs: bool = True,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A page of the notebook's cells as ``get_notebook_cells`` answers it (the notebook
    resource is all of them), and the cells of the page (whose pictures go with it)."""
    cells = nb["cells"]
    page = cells[start:] if limit is None else cells[start : start + limit]
    found: dict[str, Any] = {
        "path": doc.shown,
        "cellCount": len(cells),
        "kernel": await kernel_of(ctx, doc.path),
        "start": start,
        "cells": [
            cell_object(
                cell,
                start + i,
                shown=doc.shown,
                include_outputs=include_outputs,
                limit=LISTING_TEXT_LIMIT,
            )
            for i, cell in enumerate(page)
        ],
    }
    if start + len(page) < len(cells):
        found["nextStart"] = start + len(page)
    return found, page


def cell_images(cells: list[dict[str, Any]]) -> list[Image]:
    """The pictures of the outputs of ``cells``, in order."""
    return [image for cell in cells for image in images_of(cell.get("outputs") or [])]


async def kernel_of(ctx: ToolContext, path: Path) -> dict[str, Any] | None:
    """``{"kernelId", "name", "state"}`` of the notebook's session kernel, or None."""
    if ctx.serverapp is None:
        return None
    found = await find_notebook_kernel(ctx, path)
    if found is None:
        return None
    try:
        manager = managers.kernel(ctx.serverapp, found.kernel_id)
    except KeyError:
        return None
    return {
        "kernelId": found.kernel_id,
        "name": getattr(manager, "kernel_name", None),
        "state": await managers.state(manager),
    }
