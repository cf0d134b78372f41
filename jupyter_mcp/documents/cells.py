"""Cell edits on a notebook dict: find a cell, insert, edit, delete, move, clear outputs.

Each function changes the notebook in place or raises :class:`ToolError` before changing
anything, so run inside :meth:`NotebookDocument.change` a refused edit leaves the notebook as
it was. A cell is named by id or index; when both are given the id wins.
"""

from __future__ import annotations

import difflib
import hashlib
from typing import Any

from ..core.errors import ToolError

CELL_TYPES = ("code", "markdown", "raw")
#: Characters of a diff an edit answers (the head; the rest is said to be cut).
DIFF_LIMIT = 3000


def source_of(cell: dict[str, Any]) -> str:
    """A cell's source as one string (nbformat allows a list of lines)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def source_hash(source: str) -> str:
    """The hash an edit's ``expectedSource`` may give instead of the source itself."""
    return "sha256:" + hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


def check_text(text: str | None, field: str) -> None:
    """Refuse text no notebook can store: an unpaired surrogate (a JSON ``\\ud800`` escape)."""
    if text is None:
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ToolError(
            f"{field} has an unpaired surrogate U+{ord(text[e.start]):04X} at character "
            f"{e.start}, which a notebook (UTF-8) cannot hold; nothing was changed"
        ) from None


def cell_ids(nb: dict[str, Any]) -> list[str]:
    """The ids of the notebook's cells, in order."""
    return [str(cell.get("id")) for cell in nb["cells"]]


def find_cell(
    nb: dict[str, Any], shown: str, cell_id: str | None = None, index: int | None = None
) -> int:
    """The index of the cell named by ``cell_id`` (preferred) or ``index``."""
    cells = nb["cells"]
    if cell_id is not None:
        for i, cell in enumerate(cells):
            if cell.get("id") == cell_id:
                return i
        raise ToolError(
            f"{shown} has no cell with id {cell_id!r} (it has {len(cells)} cells; "
            "get_notebook_cells lists their ids)"
        )
    if index is None:
        raise ToolError("Name the cell with cellId or index")
    if not 0 <= index < len(cells):
        raise ToolError(_out_of_range(shown, index, len(cells)))
    return index


def _out_of_range(shown: str, index: int, count: int) -> str:
    last = f"0..{count - 1}" if count else "none: the notebook has no cells"
    return f"Cell index {index} is out of range for {shown} (valid indexes: {last})"


def new_cell(cell_type: str, source: str) -> dict[str, Any]:
    """A new nbformat 4.5 cell with a fresh id."""
    import nbformat

    if cell_type not in CELL_TYPES:
        raise ToolError(f"cellType must be one of {', '.join(CELL_TYPES)}, got {cell_type!r}")
    maker = {
        "code": nbformat.v4.new_code_cell,
        "markdown": nbformat.v4.new_markdown_cell,
        "raw": nbformat.v4.new_raw_cell,
    }[cell_type]
    return dict(maker(source))


def insert_cell(
    nb: dict[str, Any],
    shown: str,
    source: str,
    cell_type: str = "code",
    index: int | None = None,
    after_cell_id: str | None = None,
) -> dict[str, Any]:
    """Insert a new cell at ``index``, after ``after_cell_id``, or at the end."""
    check_text(source, "source")
    cells = nb["cells"]
    if index is not None and after_cell_id is not None:
        raise ToolError("Give index or afterCellId, not both")
    if after_cell_id is not None:
        position = find_cell(nb, shown, cell_id=after_cell_id) + 1
    elif index is not None:
        if not 0 <= index <= len(cells):
            raise ToolError(
                f"Insert index {index} is out of range for {shown} (0..{len(cells)}; "
                f"{len(cells)} appends)"
            )
        position = index
    else:
        position = len(cells)
    cell = new_cell(cell_type, source)
    existing = set(cell_ids(nb))
    while cell["id"] in existing:  # a fresh uuid colliding is vanishingly rare, but cheap
        cell = new_cell(cell_type, source)
    cells.insert(position, cell)
    return {"cellId": cell["id"], "index": position}


def check_expected(cell: dict[str, Any], shown: str, index: int, expected: str | None) -> None:
    """Refuse an edit whose ``expected`` source (or its hash) is not the cell's source now."""
    if expected is None:
        return
    current = source_of(cell)
    if expected == current or expected == source_hash(current):
        return
    raise ToolError(
        f"Cell {cell.get('id')} (index {index}) of {shown} changed since it was read (someone "
        "edited it); nothing was changed. Its current source is:\n" + current
    )


def unified_diff(old: str, new: str, name: str, limit: int = DIFF_LIMIT) -> str:
    """A short unified diff of a cell's source (cut to ``limit`` characters, said so)."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"{name} (before)",
        tofile=f"{name} (after)",
        n=1,
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if len(text) > limit:
        text = text[:limit] + f"\n[… diff cut at {limit} characters …]\n"
    return text


def edit_cell(
    nb: dict[str, Any],
    shown: str,
    *,
    cell_id: str | None = None,
    index: int | None = None,
    source: str | None = None,
    search_text: str | None = None,
    replace_text: str | None = None,
    replace_all: bool = False,
    cell_type: str | None = None,
    expected_source: str | None = None,
) -> dict[str, Any]:
    """Replace a cell's source, or find and replace in it, and/or change its type."""
    for text, field in (
        (source, "source"),
        (search_text, "searchText"),
        (replace_text, "replaceText"),
    ):
        check_text(text, field)
    if source is not None and search_text is not None:
        raise ToolError("Give source (to replace the whole source) or searchText, not both")
    if search_text is not None and replace_text is None:
        raise ToolError("searchText needs replaceText (use an empty string to delete the text)")
    if replace_text is not None and search_text is None:
        raise ToolError("replaceText needs searchText")
    if source is None and search_text is None and cell_type is None:
        raise ToolError("Nothing to change: give source, searchText + replaceText, or cellType")
    if cell_type is not None and cell_type not in CELL_TYPES:
        raise ToolError(f"cellType must be one of {', '.join(CELL_TYPES)}, got {cell_type!r}")
    position = find_cell(nb, shown, cell_id, index)
    cell = nb["cells"][position]
    if cell.get("cell_type") not in CELL_TYPES:
        raise ToolError(
            f"Cell {cell.get('id')} (index {position}) of {shown} is a {cell.get('cell_type')!r} "
            "cell, a type this server's nbformat does not know: it is kept as it is, and can be "
            "moved or deleted but not edited; nothing was changed"
        )
    check_expected(cell, shown, position, expected_source)
    old = source_of(cell)
    new = old
    if source is not None:
        new = source
    elif search_text is not None:
        assert replace_text is not None
        if search_text == "":
            raise ToolError("searchText must not be empty")
        count = old.count(search_text)
        if count == 0:
            raise ToolError(
                f"searchText was not found in cell {cell.get('id')} of {shown}; its source is:\n"
                + old
            )
        if count > 1 and not replace_all:
            raise ToolError(
                f"searchText occurs {count} times in cell {cell.get('id')} of {shown}; give "
                "more context to make it unique, or replaceAll: true"
            )
        new = old.replace(search_text, replace_text, -1 if replace_all else 1)
    cell["source"] = new
    old_type = cell.get("cell_type")
    header = ""
    if cell_type is not None and cell_type != old_type:
        _retype(cell, cell_type)
        header = f"cellType: {old_type} -> {cell_type}\n"
    return {
        "cellId": cell.get("id"),
        "index": position,
        "diff": header + unified_diff(old, new, f"cell {cell.get('id')}"),
    }


def _retype(cell: dict[str, Any], cell_type: str) -> None:
    """Change a cell's type with the fields nbformat wants for it (outputs only on code)."""
    cell["cell_type"] = cell_type
    if cell_type == "code":
        cell.pop("attachments", None)
        cell.setdefault("outputs", [])
        cell.setdefault("execution_count", None)
    else:
        cell.pop("outputs", None)
        cell.pop("execution_count", None)


def delete_cells(nb: dict[str, Any], shown: str, ids: list[str]) -> dict[str, Any]:
    """Delete the cells with ``ids``; refused as a whole when one is unknown."""
    if not ids:
        raise ToolError("cellIds is empty: name the cells to delete")
    known = set(cell_ids(nb))
    unknown = [i for i in dict.fromkeys(ids) if i not in known]
    if unknown:
        raise ToolError(
            f"{shown} has no cell with id {', '.join(repr(i) for i in unknown)}; nothing was "
            "deleted"
        )
    doomed = set(ids)
    nb["cells"] = [cell for cell in nb["cells"] if cell.get("id") not in doomed]
    return {"deleted": len(doomed), "cellIds": list(dict.fromkeys(ids))}


def move_cell(
    nb: dict[str, Any], shown: str, to_index: int, cell_id: str | None, index: int | None
) -> dict[str, Any]:
    """Move a cell so that it ends up at ``to_index``."""
    position = find_cell(nb, shown, cell_id, index)
    cells = nb["cells"]
    if not 0 <= to_index < len(cells):
        raise ToolError(f"toIndex {to_index} is out of range for {shown} (0..{len(cells) - 1})")
    cell = cells.pop(position)
    cells.insert(to_index, cell)
    return {"cellId": cell.get("id"), "index": to_index}


def clear_outputs(nb: dict[str, Any], shown: str, ids: list[str] | None) -> dict[str, Any]:
    """Clear the outputs and execution counts of the named code cells (all when None)."""
    if ids is not None:
        known = set(cell_ids(nb))
        unknown = [i for i in dict.fromkeys(ids) if i not in known]
        if unknown:
            raise ToolError(
                f"{shown} has no cell with id {', '.join(repr(i) for i in unknown)}; nothing "
                "was cleared"
            )
    wanted = None if ids is None else set(ids)
    cleared = []
    for cell in nb["cells"]:
        if cell.get("cell_type") != "code" or (wanted is not None and cell["id"] not in wanted):
            continue
        if cell.get("outputs") or cell.get("execution_count") is not None:
            cell["outputs"] = []
            cell["execution_count"] = None
            cleared.append(cell["id"])
    return {"cleared": len(cleared), "cellIds": cleared}
