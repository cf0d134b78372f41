"""Notebooks as text: the percent-format view every text tool sees, and writing it back.

The view is what jupytext writes for ``auto:percent`` with all metadata filtered out, so an
agent reads cells as ``# %%`` / ``# %% [markdown]`` blocks. Writing a view back does not
re-create the notebook from the text (a plain jupytext round trip adds metadata and reflows
some sources); it matches the cells of the new text with those of the current view and only
touches cells whose text changed, so outputs, ids and metadata of the others stay as they were.
"""

from __future__ import annotations

import copy
import difflib
from typing import Any

import jupytext
import nbformat
from nbformat import NotebookNode

from ..core.errors import ToolError

_FILTERS = {"notebook_metadata_filter": "-all", "cell_metadata_filter": "-all"}


def _for_view(nb: NotebookNode) -> NotebookNode:
    shallow = copy.copy(nb)
    shallow.metadata = NotebookNode({**nb.metadata, "jupytext": dict(_FILTERS)})
    if not shallow.metadata.get("kernelspec") and not shallow.metadata.get("language_info"):
        shallow.metadata["kernelspec"] = {"name": "python3", "language": "python"}
    return shallow


def notebook_view(nb: NotebookNode) -> str:
    """The percent-format text of ``nb``: cell sources only, no metadata header."""
    return jupytext.writes(_for_view(nb), fmt=f"{_view_extension(nb)}:percent")


def parse_view(text: str, like: NotebookNode | None = None) -> NotebookNode:
    """Parse percent-format text into a notebook (cells only)."""
    fmt = f"{_view_extension(like)}:percent" if like is not None else "py:percent"
    try:
        return jupytext.reads(text, fmt=fmt)
    except Exception as e:  # jupytext raises many types for malformed text
        raise ToolError(f"The text is not a valid percent-format notebook: {e}") from e


def _view_extension(nb: NotebookNode) -> str:
    language = (nb.metadata.get("kernelspec") or {}).get("language") or (
        nb.metadata.get("language_info") or {}
    ).get("name")
    if not language:
        return "py"
    from jupytext.languages import _SCRIPT_EXTENSIONS

    for ext, info in _SCRIPT_EXTENSIONS.items():
        if info.get("language") == language:
            return ext.lstrip(".")
    return "py"


def _key(cell: Any) -> tuple[str, str]:
    return (cell.cell_type, cell.source)


def apply_view(nb: NotebookNode, text: str) -> NotebookNode | None:
    """A copy of ``nb`` whose cells follow ``text``; None when ``text`` is its current view.

    Cells whose text did not change are kept verbatim (source, outputs, id, metadata, execution
    count). A changed cell keeps its id, metadata and outputs, as when a user edits it in
    JupyterLab. New cells get fresh ids; cells missing from the text are removed.
    """
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
                cell = _new_cell(new.cell_type, new.source, nb)
            cells.append(cell)
    result = copy.deepcopy(nb)
    result.cells = cells
    return result


def _new_cell(cell_type: str, source: str, nb: NotebookNode) -> NotebookNode:
    maker = {
        "code": nbformat.v4.new_code_cell,
        "markdown": nbformat.v4.new_markdown_cell,
        "raw": nbformat.v4.new_raw_cell,
    }[cell_type]
    cell = maker(source)
    if (nb.get("nbformat"), nb.get("nbformat_minor", 0)) < (4, 5):
        cell.pop("id", None)
    return cell


def new_notebook_from_view(text: str) -> NotebookNode:
    """A new notebook (Python 3 kernel) whose cells are those of the percent-format ``text``."""
    parsed = parse_view(text)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [_new_cell(c.cell_type, c.source, nb) for c in parsed.cells]
    return nb


def read_notebook(raw: str, name: str) -> NotebookNode:
    """Parse notebook JSON with a clear error when it is not a notebook."""
    try:
        return nbformat.reads(raw, as_version=4)
    except Exception as e:
        raise ToolError(f"{name} is not a valid notebook: {e}") from e


def dump_notebook(nb: NotebookNode) -> str:
    """Serialise a notebook as Jupyter writes it."""
    return nbformat.writes(nb, version=nbformat.NO_CONVERT)
