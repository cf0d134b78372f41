"""Notebooks in every version nbformat reads, and the ids of their cells (notebook_format).

Mostly on nbformat's own test notebooks; the few cases no public file shows (five cells
sharing an id, ids colliding with derived ones) are written here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from public_notebooks import NBFORMAT, NBFORMAT_UNUSABLE, OTHERS, nbformat_notebook, public_notebook

from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.documents import notebook_format
from jupyter_mcp.documents.notebook_format import (
    dump_notebook,
    parse_notebook,
    validation_problem,
)
from jupyter_mcp.documents.notebook_view import apply_view, notebook_view

#: nbformat's rule for a cell id (its schema's pattern).
VALID_ID = re.compile(r"^[a-zA-Z0-9-_]{1,64}$")

CASES = {
    **{what: nbformat_notebook(name) for what, name in NBFORMAT.items()},
    **{what: public_notebook(name) for what, name in OTHERS.items()},
}


def _ids(raw: str) -> list[str]:
    notebook_format._parsed.clear()
    return [cell.id for cell in parse_notebook(raw, "n.ipynb")[0].cells]


def _ids_in_another_process(paths: list[Path]) -> list[list[str]]:
    """The ids a fresh interpreter (a restarted server) gives the notebooks at ``paths``."""
    code = (
        "import json, sys\n"
        "from jupyter_mcp.documents.notebook_format import parse_notebook\n"
        "print(json.dumps([[c.id for c in parse_notebook(open(p, encoding='utf-8').read(), p)[0]"
        ".cells] for p in sys.argv[1:]]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, paths)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return list(json.loads(done.stdout.splitlines()[-1]))


def _as_stored(nb: Any) -> str:
    """``nb`` as a file would hold it: nbformat's writer would repair the ids first."""
    return json.dumps(nb, indent=1)


def _stored_ids(raw: str) -> list[Any]:
    data = json.loads(raw)
    return [cell.get("id") for cell in data.get("cells", [])] if data.get("nbformat") == 4 else []


@pytest.mark.parametrize("what", list(CASES))
def test_every_version_nbformat_reads_gives_the_same_ids_every_time(what: str) -> None:
    raw = CASES[what].read_text(encoding="utf-8")
    # Given nbformat's own reading of the file (its cells, in any version)
    theirs = nbformat.reads(raw, as_version=4)
    # When the tools read it twice (their cache emptied in between)
    first, second = _ids(raw), _ids(raw)
    # Then they see nbformat's cells, with ids that are valid, unique and the same each time
    nb = parse_notebook(raw, "n.ipynb")[0]
    assert [c.cell_type for c in nb.cells] == [c.cell_type for c in theirs.cells]
    assert [c.get("source") for c in nb.cells] == [c.get("source") for c in theirs.cells]
    assert first == second
    assert len(set(first)) == len(first) and all(VALID_ID.match(i) for i in first)
    # And every valid id the file stores is kept, for the first cell that has it
    seen: set[str] = set()
    for stored, given in zip(_stored_ids(raw), first, strict=False):
        if isinstance(stored, str) and VALID_ID.match(stored) and stored not in seen:
            assert given == stored
        seen.add(stored)


def test_a_restarted_server_gives_the_same_ids() -> None:
    paths = list(CASES.values())
    assert _ids_in_another_process(paths) == [_ids(p.read_text(encoding="utf-8")) for p in paths]


def test_five_cells_sharing_an_id_are_made_unique_once_deterministically() -> None:
    # Given five cells sharing one id (three of them identical), one without an id, one with
    # an invalid id, and one storing the id a derivation might have chosen
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in ("a", "x", "x", "x", "b", "c", "d", "e")]
    for cell in nb.cells[:5]:
        cell.id = "same"
    del nb.cells[5]["id"]
    nb.cells[6]["id"] = "$illegal"
    raw = _as_stored(nb)
    derived = _ids(raw)
    nb.cells[7]["id"] = derived[1]  # a stored id wins over a derived one
    raw = _as_stored(nb)
    ids = _ids(raw)
    assert [c.get("id") for c in json.loads(raw)["cells"]][:5] == ["same"] * 5
    # Then none is lost, the first keeps its id, every other gets a valid one of its own
    assert len(ids) == 8 and ids[0] == "same" and ids[7] == derived[1]
    assert len(set(ids)) == 8 and all(VALID_ID.match(i) for i in ids)
    # And the same file gives the same ids again, in this process and another
    assert _ids(raw) == ids


def test_five_cells_sharing_an_id_in_another_process(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(f"# {i % 2}") for i in range(5)]
    for cell in nb.cells:
        cell.id = "dup"
    path = tmp_path / "dup.ipynb"
    path.write_text(_as_stored(nb), encoding="utf-8")
    assert [c["id"] for c in json.loads(path.read_text(encoding="utf-8"))["cells"]] == ["dup"] * 5
    ids = _ids(path.read_text(encoding="utf-8"))
    assert ids[0] == "dup" and len(set(ids)) == 5
    assert _ids_in_another_process([path]) == [ids]


@pytest.mark.parametrize(
    ("what", "version", "stored", "upgraded"),
    [
        ("v2", "2", False, True),
        ("v3", "3.0", False, True),
        ("v4.0", "4.0", False, True),
        ("v4.2", "4.2", False, True),
        ("v4.4", "4.4", False, True),
        ("v4 without a minor version", "4", False, True),
        ("v4.5", "4.5", True, False),
        ("v4.5 without ids", "4.5", False, True),
        ("v4.5 with two cells sharing an id", "4.5", False, True),
        ("v4.5 with one cell lacking an id", "4.5", False, True),
        ("v4.99 with a cell type from the future", "4.99", True, False),
    ],
)
def test_what_a_file_says_of_itself(what: str, version: str, stored: bool, upgraded: bool) -> None:
    _, found = parse_notebook(CASES[what].read_text(encoding="utf-8"), "n.ipynb")
    assert (found.version, found.ids_stored, found.upgraded_on_write) == (
        version,
        stored,
        upgraded,
    )


UNREADABLE = {
    **{
        what: nbformat_notebook(name).read_text(encoding="utf-8")
        for what, name in NBFORMAT_UNUSABLE.items()
    },
    "not JSON": '{"cells": [',
    "a JSON list": "[]",
    "nbformat 5": json.dumps({"nbformat": 5, "nbformat_minor": 0, "cells": [], "metadata": {}}),
    "nbformat_minor a string": json.dumps(
        {"nbformat": 4, "nbformat_minor": "5", "cells": [], "metadata": {}}
    ),
    "metadata a string": json.dumps(
        {"nbformat": 4, "nbformat_minor": 5, "cells": [], "metadata": "x"}
    ),
    "a cell that is a string": json.dumps(
        {"nbformat": 4, "nbformat_minor": 5, "cells": ["x"], "metadata": {}}
    ),
    "cell metadata a list": json.dumps(
        {
            "nbformat": 4,
            "nbformat_minor": 5,
            "metadata": {},
            "cells": [{"cell_type": "raw", "id": "a", "source": "", "metadata": []}],
        }
    ),
}


@pytest.mark.parametrize("what", list(UNREADABLE))
def test_notebooks_the_tools_cannot_read_are_clear_errors(what: str) -> None:
    with pytest.raises(ToolError, match=r"^n\.ipynb is not a valid notebook: \w"):
        parse_notebook(UNREADABLE[what], "n.ipynb")


def test_a_notebook_is_written_as_jupyter_writes_it(tmp_path: Path) -> None:
    raw = CASES["v4.5"].read_text(encoding="utf-8")
    nb, _ = parse_notebook(raw, "n.ipynb")
    path = tmp_path / "saved.ipynb"
    nbformat.write(nbformat.reads(raw, as_version=4), path)  # as Jupyter's contents manager
    assert dump_notebook(nb) == path.read_text(encoding="utf-8")
    assert dump_notebook(nb).endswith("}\n")


def test_validation_names_what_is_invalid_and_relaxes_newer_versions() -> None:
    invalid, _ = parse_notebook(CASES["v4.5 with invalid metadata"].read_text(), "n.ipynb")
    problem = validation_problem(invalid)
    assert problem is not None and problem.startswith("metadata.")
    future, _ = parse_notebook(CASES["v4.99 with a cell type from the future"].read_text(), "n")
    assert validation_problem(future) is None
    # An old notebook is checked as it will be stored: nbformat 4.5, with its ids
    old, _ = parse_notebook(CASES["v4.2"].read_text(), "n.ipynb")
    assert validation_problem(old) is None


def test_a_cell_of_an_unknown_type_shows_as_raw_and_the_text_cannot_drop_it() -> None:
    nb, _ = parse_notebook(CASES["v4.99 with a cell type from the future"].read_text(), "n")
    future = next(i for i, c in enumerate(nb.cells) if c.cell_type == "future cell")
    view = notebook_view(nb)
    blocks = view.split("# %%")[1:]
    assert len(blocks) == len(nb.cells)
    assert blocks[future].startswith(" [raw]") and "'future cell' cell" in blocks[future]
    # Editing the cell after it keeps it verbatim, extra fields and all
    edited = view.replace("future_output()", "future_output(1)")
    updated = apply_view(nb, edited, view)
    assert updated is not None and updated.cells[future] == nb.cells[future]
    assert updated.cells[future + 1].source == "future_output(1)"
    # Dropping (or rewriting) its text is refused: only delete_notebook_cells removes it
    dropped = "# %%".join(["", *blocks[:future], *blocks[future + 1 :]])
    with pytest.raises(ToolError, match="'future cell' cell"):
        apply_view(nb, dropped, view)
