"""Notebooks as text: the percent-format view every text tool sees, and writing it back.

The view is what jupytext writes for ``auto:percent`` with all metadata filtered out, so an
agent reads cells as ``# %%`` / ``# %% [markdown]`` blocks. Writing a view back does not
re-create the notebook from the text (a plain jupytext round trip adds metadata and reflows
some sources); it matches the cells of the new text with those of the current view and only
touches cells whose text changed, so outputs, ids and metadata of the others stay as they were.

Rendering costs milliseconds (nbformat + jupytext) and agents re-read the same notebooks, so
views are kept in one cache: a file's by its path and change stamp (:func:`view_of`), a
notebook that is no file (a JupyterLab window's live cells) by its content
(:func:`view_of_notebook`). jupytext and nbformat are imported where they are used: the
code-analysis worker imports this module for the cell markers alone.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import re
import threading
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from .notebook_format import (
    IDS_SINCE,
    is_known_cell,
    notebook_language,
    parsed_file,
    read_notebook,
    source_text,
    version_of,
)

if TYPE_CHECKING:
    from nbformat import NotebookNode

#: How a cell starts in the view (``# %%`` alone, with a title or ``[markdown]``).
CELL_MARKER = "# %%"
#: A magic or shell line as the view shows it (``# %time …``, ``# !ls``), not a cell marker.
_MAGIC_LINE = re.compile(r"\s*# ?(!|%(?!%( |$))|%%\S)")

_FILTERS = {"notebook_metadata_filter": "-all", "cell_metadata_filter": "-all"}


def is_magic_line(line: str) -> bool:
    """True for an IPython magic or shell line of a view, which jupytext shows commented."""
    return _MAGIC_LINE.match(line) is not None


def _for_view(nb: NotebookNode) -> NotebookNode:
    """What jupytext renders: ``nb``'s cells, a cell of a type nbformat 4 does not define as a
    raw cell of its source, and of the metadata only what names the language (the view shows
    no metadata, and metadata that is not what nbformat describes must not break it)."""
    from nbformat import NotebookNode

    shallow = copy.copy(nb)
    found = nb.get("metadata")
    metadata: dict[str, Any] = found if isinstance(found, dict) else {}
    shown = NotebookNode({"jupytext": dict(_FILTERS)})
    for key in ("kernelspec", "language_info"):
        if isinstance(metadata.get(key), dict):
            shown[key] = metadata[key]
    if notebook_language(nb) is None:
        shown["kernelspec"] = {"name": "python3", "language": "python"}
    shallow.metadata = shown
    # A newer minor version renders as the newest jupytext knows (it would warn of it).
    shallow.nbformat, shallow.nbformat_minor = 4, min(version_of(nb)[1], IDS_SINCE[1])
    if not all(is_known_cell(cell) for cell in nb.cells):
        shallow.cells = [cell if is_known_cell(cell) else _stand_in(cell) for cell in nb.cells]
    return shallow


def _stand_in(cell: Any) -> NotebookNode:
    """The raw cell a cell of an unknown type shows as in the view (JupyterLab shows it as a
    raw cell too): its source, or a line that says what it is."""
    from nbformat import NotebookNode

    source = source_text(cell) or (
        f"[a {cell.get('cell_type')!r} cell: a cell type nbformat 4 does not define, kept as it is]"
    )
    return NotebookNode(cell_type="raw", source=source, metadata=NotebookNode())


def _view_type(cell: Any) -> str:
    return cell.get("cell_type") if is_known_cell(cell) else "raw"


def notebook_view(nb: NotebookNode) -> str:
    """The percent-format text of ``nb``: cell sources only, no metadata header (uncached)."""
    import jupytext

    return jupytext.writes(_for_view(nb), fmt=f"{_view_extension(nb)}:percent")


def parse_view(text: str, like: NotebookNode | None = None) -> NotebookNode:
    """Parse percent-format text into a notebook (cells only)."""
    import jupytext

    fmt = f"{_view_extension(like)}:percent" if like is not None else "py:percent"
    try:
        return jupytext.reads(text, fmt=fmt)
    except Exception as e:  # jupytext raises many types for malformed text
        raise ToolError(f"The text is not a valid percent-format notebook: {e}") from e


def _view_extension(nb: NotebookNode) -> str:
    language = notebook_language(nb)
    if not language:
        return "py"
    from jupytext.languages import _SCRIPT_EXTENSIONS

    for ext, info in _SCRIPT_EXTENSIONS.items():
        if info.get("language") == language:
            return ext.lstrip(".")
    return "py"


def _key(cell: Any) -> tuple[str, str]:
    return (_view_type(cell), source_text(cell))


def apply_view(nb: NotebookNode, text: str, old_text: str | None = None) -> NotebookNode | None:
    """A copy of ``nb`` whose cells follow ``text``; None when ``text`` is its current view.

    Cells whose text did not change are kept verbatim (source, outputs, id, metadata, execution
    count). A changed cell keeps its id, metadata and outputs, as when a user edits it in
    JupyterLab. New cells get fresh ids; cells missing from the text are removed.
    ``old_text`` is ``nb``'s view when the caller has it.
    """
    if old_text is None:
        old_text = notebook_view(nb)
    if text == old_text:
        return None
    old_view_cells = parse_view(old_text, nb).cells
    new_cells = parse_view(text, nb).cells
    # The view's cells normally map one-to-one onto the notebook's; if jupytext merged or split
    # something, compare with the notebook's own sources instead.
    reference = old_view_cells if len(old_view_cells) == len(nb.cells) else nb.cells
    old_keys = [_key(c) for c in reference]
    new_keys = [_key(c) for c in new_cells]
    matcher = difflib.SequenceMatcher(a=old_keys, b=new_keys, autojunk=False)
    opcodes = matcher.get_opcodes()
    # Old cells kept in place, then old cells that moved (same text elsewhere), are reused
    # verbatim; what is left pairs up by position as edited cells.
    used = {i for tag, i1, i2, _, _ in opcodes if tag == "equal" for i in range(i1, i2)}
    unused_by_key: dict[tuple[str, str], list[int]] = {}
    for i, key in enumerate(old_keys):
        if i not in used:
            unused_by_key.setdefault(key, []).append(i)
    cells: list[NotebookNode] = []
    taken = {str(cell.get("id")) for cell in nb.cells}
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            cells.extend(copy.deepcopy(nb.cells[i1:i2]))
            continue
        for k, new in enumerate(new_cells[j1:j2]):
            moved = unused_by_key.get(new_keys[j1 + k])
            if moved:
                index = moved.pop(0)
                used.add(index)
                cells.append(copy.deepcopy(nb.cells[index]))
                continue
            candidate = i1 + k
            old = nb.cells[candidate] if candidate < i2 and candidate not in used else None
            if old is not None and old.cell_type == new.cell_type:
                used.add(candidate)
                unused_by_key[old_keys[candidate]].remove(candidate)
                cell = copy.deepcopy(old)
                cell.source = new.source
            else:
                cell = _new_cell(new.cell_type, new.source, taken)
            cells.append(cell)
    _keep_unknown_cells(nb, cells)
    result = copy.deepcopy(nb)
    result.cells = cells
    return result


def _keep_unknown_cells(nb: NotebookNode, cells: list[Any]) -> None:
    """Refuse a text that drops a cell of a type nbformat 4 does not define: the view shows it
    as a raw cell, but its text cannot say what it holds, so it is only ever kept verbatim
    (moved with the text around it) or deleted by id."""
    kept = {cell.get("id") for cell in cells if not is_known_cell(cell)}
    for index, cell in enumerate(nb.cells):
        if not is_known_cell(cell) and cell.get("id") not in kept:
            raise ToolError(
                f"The text changes or removes cell {index} (id {cell.get('id')}), a "
                f"{cell.get('cell_type')!r} cell, a type this server's nbformat does not know: "
                "it shows as a raw cell and has to stay as it is in the text (delete it with "
                "delete_notebook_cells); nothing was written"
            )


def _new_cell(cell_type: str, source: str, taken: set[str]) -> NotebookNode:
    """A new cell with a fresh id (none of ``taken``, which it joins)."""
    import nbformat

    maker = {
        "code": nbformat.v4.new_code_cell,
        "markdown": nbformat.v4.new_markdown_cell,
        "raw": nbformat.v4.new_raw_cell,
    }[cell_type]
    cell = maker(source)
    while cell.id in taken:  # a fresh random id colliding is vanishingly rare, but cheap
        cell = maker(source)
    taken.add(cell.id)
    return cell


def new_notebook_from_view(text: str) -> NotebookNode:
    """A new notebook (Python 3 kernel) whose cells are those of the percent-format ``text``."""
    import nbformat

    parsed = parse_view(text)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    taken: set[str] = set()
    nb.cells = [_new_cell(c.cell_type, c.source, taken) for c in parsed.cells]
    return nb


def notebook_from_cells(cells: Any, metadata: Any) -> NotebookNode:
    """A notebook made of the cells a JupyterLab window sent (type, source, id, metadata; no
    outputs)."""
    import nbformat

    if not isinstance(cells, list):
        raise ToolError("The JupyterLab window sent a malformed notebook (no cells)")
    nb = nbformat.v4.new_notebook()
    nb.metadata = nbformat.from_dict(metadata if isinstance(metadata, dict) else {})
    for raw in cells:
        if not isinstance(raw, dict) or raw.get("cell_type") not in ("code", "markdown", "raw"):
            raise ToolError("The JupyterLab window sent a malformed notebook cell")
        source = raw.get("source", "")
        if isinstance(source, list):
            source = "".join(source)
        maker = {
            "code": nbformat.v4.new_code_cell,
            "markdown": nbformat.v4.new_markdown_cell,
            "raw": nbformat.v4.new_raw_cell,
        }[raw["cell_type"]]
        cell = maker(str(source))
        if isinstance(raw.get("id"), str) and raw["id"]:
            cell.id = raw["id"]
        if isinstance(raw.get("metadata"), dict):
            cell.metadata = nbformat.from_dict(raw["metadata"])
        nb.cells.append(cell)
    return nb


# --------------------------------------------------------------------------------------------
# The one cache of views

_CACHE_SIZE = 128
#: key → (version, view): one entry per file (its latest stamp) or per notebook content.
_views: dict[Hashable, tuple[Hashable, str]] = {}
_views_lock = threading.Lock()


def _cached(key: Hashable, version: Hashable, render: Callable[[], str]) -> str:
    with _views_lock:
        found = _views.get(key)
    if found is not None and found[0] == version:
        return found[1]
    view = render()
    with _views_lock:
        _views[key] = (version, view)
        while len(_views) > _CACHE_SIZE:
            _views.pop(next(iter(_views)))
    return view


def view_of(path: Path, stamp: Hashable, load: Callable[[], str], shown: str) -> str:
    """The view of the notebook file at ``path`` whose change stamp is ``stamp``.

    ``load`` returns the file's JSON text (it is called only when the view is not cached);
    a ToolError when it is not a notebook.
    """
    return _cached(path, stamp, lambda: notebook_view(parsed_file(path, stamp, load, shown).nb))


def view_of_notebook(nb: NotebookNode) -> str:
    """The view of a notebook that is no file on disk (a window's cells), cached by content."""
    key = hashlib.sha256(
        json.dumps([nb.metadata, nb.cells], sort_keys=True, default=str).encode()
    ).hexdigest()
    return _cached(key, None, lambda: notebook_view(nb))


def view_of_json(raw: str, shown: str) -> str:
    """The view of notebook JSON that is no current file (a blob of a commit); uncached."""
    return notebook_view(read_notebook(raw, shown))


# --------------------------------------------------------------------------------------------
# Cells and view lines


def cell_marker_lines(nb: NotebookNode, view: str | None = None) -> list[int] | None:
    """The 1-based view line of each cell's marker; None when they do not map 1:1.

    ``view`` is the notebook's view when the caller has it (else it is rendered, cached).
    """
    lines = (view if view is not None else view_of_notebook(nb)).splitlines()
    markers = [i + 1 for i, text in enumerate(lines) if text.startswith(CELL_MARKER)]
    return markers if len(markers) == len(nb.cells) else None


def view_lines_by_cell(
    nb: NotebookNode, lines: set[int], view: str | None = None
) -> list[dict[str, Any]]:
    """``[{"id", "lines"}]``: the view ``lines`` as lines inside each cell (1-based)."""
    markers = cell_marker_lines(nb, view)
    if markers is None:
        return []
    cells = []
    for index, cell in enumerate(nb.cells):
        first = markers[index] + 1
        count = len(source_text(cell).splitlines())
        inside = sorted(line - first + 1 for line in lines if first <= line < first + count)
        if inside:
            cells.append({"id": cell.get("id"), "lines": inside})
    return cells


def view_lines_of_cells(
    nb: NotebookNode, cells: dict[str, list[int]], view: str | None = None
) -> set[int] | None:
    """The view lines of lines given per cell id (lines inside the cell, 1-based)."""
    markers = cell_marker_lines(nb, view)
    if markers is None:
        return None
    found: set[int] = set()
    for index, cell in enumerate(nb.cells):
        for line in cells.get(cell.get("id"), []):
            if isinstance(line, int) and line >= 1:
                found.add(markers[index] + line)
    return found
