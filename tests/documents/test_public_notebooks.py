"""The file and cell tools on every notebook of nbformat's, nbdime's, JupyterLab's and
jupytext's sdists (their tests and examples: 233 notebooks, nobody here wrote them), through a
real server with the notebooks in their files.

For each: the text view and the cells read (nbformat's cells, the same ids again once the
caches are emptied), writing the unchanged text back changes no byte, and an edit followed by
its undo, through a cell tool and through the text view, gives the file back: byte for byte
when it is a v4.5 notebook as Jupyter writes it, else as Jupyter writes it (nbformat's JSON, a
final newline), upgraded to nbformat 4.5 with the ids the tools gave out. A notebook the tools
cannot read gets a clear error and is left as it was.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from public_notebooks import NBFORMAT, all_public_notebooks, copy_into

from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.documents import notebook_format, notebook_view

CODE_TYPES = ("code", "markdown", "raw")


@pytest.fixture(scope="module")
def corpus() -> dict[str, Path]:
    return all_public_notebooks()


def _marker(view: str) -> str:
    """How a code cell starts in ``view`` (``# %%``, ``/* %% */`` …, by the language)."""
    for line in view.splitlines():
        if "%%" in line:
            return line.replace(" [markdown]", "").replace(" [raw]", "")
    return "# %%"


def _as_jupyter_writes(raw: str, ids: list[str]) -> str:
    """The notebook as JupyterLab saves it after reading it with these ids (nbformat 4.5 at
    least), computed with nbformat alone."""
    nb = nbformat.reads(raw, as_version=4)
    for cell, cell_id in zip(nb.cells, ids, strict=True):
        cell["id"] = cell_id
    nb.nbformat, nb.nbformat_minor = 4, max(5, nb.get("nbformat_minor", 0))
    return nbformat.writes(nb) + "\n"


async def test_every_public_notebook_reads_and_gives_its_bytes_back_after_an_undone_edit(
    ok: Any, fails: Any, jp_root_dir: Path, corpus: dict[str, Path]
) -> None:
    assert len(corpus) >= 230, sorted(corpus)
    counts = {
        "unreadable": 0,
        "no cell to edit": 0,
        "kept byte for byte": 0,
        "upgraded as Jupyter writes": 0,
    }
    for name, source in corpus.items():
        path = copy_into(source, jp_root_dir, name)
        raw = path.read_bytes()
        try:
            ours, stored = notebook_format.parse_notebook(raw.decode(), name)
        except ToolError:
            # A notebook nbformat cannot read (or whose cells are not cells): a clear error
            for tool in ("get_file_text_by_path", "get_notebook_cells"):
                message = await fails(tool, pathInProject=name)
                assert message.startswith(f"{name} is not a valid notebook: "), (tool, message)
            assert path.read_bytes() == raw
            counts["unreadable"] += 1
            continue
        theirs = nbformat.reads(raw.decode(), as_version=4)
        text = (await ok("get_file_text_by_path", pathInProject=name))["content"]
        listed = await ok("get_notebook_cells", pathInProject=name, limit=500, includeOutputs=False)
        ids = [c["cellId"] for c in listed["cells"]]
        assert [c["cellType"] for c in listed["cells"]] == [c.cell_type for c in theirs.cells]
        notebook_format._parsed.clear()
        notebook_view._views.clear()
        again = await ok("get_notebook_cells", pathInProject=name, limit=500, includeOutputs=False)
        assert [c["cellId"] for c in again["cells"]] == ids, name
        assert (await ok("get_file_text_by_path", pathInProject=name))["content"] == text
        # Writing the unchanged text back changes nothing
        await ok("rewrite_file_content", pathInProject=name, text=text)
        assert path.read_bytes() == raw, name

        known = [c for c in listed["cells"] if c["cellType"] in CODE_TYPES]
        if not known:
            counts["no cell to edit"] += 1
            continue
        # An edit through a cell tool, and its undo
        target = known[0]
        for source_now in (target["source"] + "\n# edited", target["source"]):
            await ok(
                "edit_notebook_cell", pathInProject=name, cellId=target["cellId"], source=source_now
            )
        after_cell = path.read_bytes()
        if not stored.upgraded_on_write and _as_jupyter_writes(raw.decode(), ids) == raw.decode():
            assert after_cell == raw, name
            counts["kept byte for byte"] += 1
        else:
            assert after_cell.decode() == _as_jupyter_writes(raw.decode(), ids), name
            counts["upgraded as Jupyter writes"] += 1
        assert [c.get("id") for c in json.loads(after_cell)["cells"]] == ids

        # An edit through the text view (a cell added), and its undo
        view = (await ok("get_file_text_by_path", pathInProject=name))["content"]
        added = "\n" + _marker(view) + "\nadded = 1\n"
        await ok("append_file_content", pathInProject=name, text=added)
        assert len(json.loads(path.read_bytes())["cells"]) == len(ids) + 1, name
        await ok("rewrite_file_content", pathInProject=name, text=view)
        assert path.read_bytes() == after_cell, name
    # Every notebook is accounted for: nbformat's four unreadable ones, its empty ones, and
    # the Jupyter-formatted v4.5 notebooks, each given back byte for byte
    assert sum(counts.values()) == len(corpus), counts
    assert counts["unreadable"] == 4 and counts["no cell to edit"] <= 3, counts
    assert counts["kept byte for byte"] >= 60, counts


async def test_search_and_code_intelligence_read_every_version_through_the_view(
    ok: Any, jp_root_dir: Path, mcp_app: Any
) -> None:
    from public_notebooks import nbformat_notebook

    for name in NBFORMAT.values():
        copy_into(nbformat_notebook(name), jp_root_dir, f"versions/{name}")
    try:
        # Search finds cell text in every version (v2's and v3's cells included)
        found = await ok("search_in_files_content", searchText="Printed Using Python")
        paths = {hit["path"] for hit in found}
        for what in ("v3", "v4.0", "v4.5", "v4.99 with a cell type from the future"):
            assert f"versions/{NBFORMAT[what]}" in paths, (what, paths)
        found = await ok("search_in_files_content", searchText="An introduction to the Jupyter")
        assert f"versions/{NBFORMAT['v2']}" in {hit["path"] for hit in found}
        # Symbols of a v3 notebook and of a 4.99 one, read from their views
        for what in ("v3", "v4.99 with a cell type from the future"):
            symbols = await ok("get_symbols_in_file", pathInProject=f"versions/{NBFORMAT[what]}")
            assert "HTML" in {s["name"] for s in symbols["symbols"]}, what
        # Problems of a notebook with invalid metadata: its cells are still checked
        problems = await ok(
            "get_file_problems", pathInProject=f"versions/{NBFORMAT['v4.5 with invalid metadata']}"
        )
        assert isinstance(problems["problems"], list)
    finally:
        mcp_app.tool_context.services.code.close()
