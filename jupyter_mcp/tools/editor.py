"""Editor tools: the document focused last in JupyterLab is the active editor.

Reads include unsaved edits, and a notebook reads as its percent-format view. Edits go through
the live document model in the browser, so they show at once, are undoable with Ctrl+Z and are
saved by the user's own save. With no JupyterLab window connected, reads answer ``""`` (no
active editor) and edits fail with a clear error.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.registry import ToolSet
from ..documents.notebook_view import apply_view
from ..lab.editor import NoWindowError, connected_editor

tools = ToolSet("editor")

NO_WINDOW = (
    "No JupyterLab window is connected, so there is no active editor; open JupyterLab in a "
    "browser (or use the file tools such as rewrite_file_content)"
)
NO_DOCUMENT = (
    "No file is open in the JupyterLab editor; open one first (open_file_in_editor) or use the "
    "file tools such as rewrite_file_content"
)


@tools.tool(
    "get_open_in_editor_file_text",
    "The text of the document focused last in JupyterLab, unsaved edits included (a "
    "notebook as its percent-format script); an empty string when none is open.",
    read_only=True,
    title="Read active editor",
)
async def get_open_in_editor_file_text(ctx: ToolContext) -> str:
    """The active document's text, or ``""``."""
    bridge = ctx.services.editor  # None outside a server
    if bridge is None:
        return ""
    try:
        active = await bridge.read_active()
    except NoWindowError:
        return ""
    return active["text"] if active else ""


@tools.tool(
    "get_open_in_editor_file_path",
    "The absolute path of the document focused last in JupyterLab; an empty string when none "
    "is open.",
    read_only=True,
    title="Active editor path",
)
async def get_open_in_editor_file_path(ctx: ToolContext) -> str:
    """The active document's absolute path, or ``""``."""
    bridge = ctx.services.editor
    return bridge.state()["activeFile"] if bridge is not None else ""


@tools.tool(
    "replace_selected_text",
    "Replace the selection in JupyterLab's active editor (in a notebook, of the active cell) "
    "with text, or insert it at the cursor. Undoable; not saved until the user saves.",
    {"text": {"type": "string"}},
    required=["text"],
    title="Replace selection",
)
async def replace_selected_text(ctx: ToolContext, text: str) -> str:
    """Replace the selection through the editor's model."""
    bridge = connected_editor(ctx, NO_WINDOW)
    result = await bridge.ask().replace_selection(text)
    if result is None:
        raise ToolError(NO_DOCUMENT)
    return "ok"


@tools.tool(
    "replace_current_file_text",
    "Replace the whole text of JupyterLab's active document (a notebook's as percent-format "
    "text: unchanged cells keep their outputs). Undoable; not saved until the user saves.",
    {"text": {"type": "string"}},
    required=["text"],
    idempotent=True,
    title="Replace editor text",
)
async def replace_current_file_text(ctx: ToolContext, text: str) -> str:
    """Replace the active document's text through its model (notebooks cell by cell)."""
    bridge = connected_editor(ctx, NO_WINDOW)
    active = await bridge.read_active()
    if active is None:
        raise ToolError(NO_DOCUMENT)
    if active["type"] == "notebook":
        updated = await asyncio.to_thread(apply_view, active["notebook"], text)
        if updated is None:
            return "ok"
        cells = [_cell_message(cell) for cell in updated.cells]
        result = await bridge.ask().replace_document(active["path"], cells=cells)
    else:
        result = await bridge.ask().replace_document(active["path"], text=text)
    if result is None:
        raise ToolError(NO_DOCUMENT)
    return "ok"


def _cell_message(cell: Any) -> dict[str, Any]:
    return {"id": cell.get("id"), "cell_type": cell.cell_type, "source": cell.source}


@tools.tool(
    "open_file_in_editor",
    "Open a project file in JupyterLab and make it the active editor.",
    {"pathInProject": {"type": "string", "description": "Relative to the project root."}},
    required=["pathInProject"],
    read_only=True,
    title="Open file",
)
async def open_file_in_editor(ctx: ToolContext, pathInProject: str) -> str:
    """Open the file through JupyterLab's document manager."""
    path = await asyncio.to_thread(ctx.resolve, pathInProject)
    if not path.exists():
        raise ToolError(f"File not found: {pathInProject}")
    if path.is_dir():
        raise ToolError(f"{pathInProject} is a directory, not a file")
    bridge = connected_editor(ctx, NO_WINDOW)
    await bridge.ask().open_file(ctx.relative(path))
    return "file is opened"
