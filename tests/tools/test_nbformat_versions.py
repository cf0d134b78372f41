"""Every notebook nbformat reads, through the text view and the cell tools of a real server.

nbformat's own test notebooks (v2, v3, every v4 minor, 4.99 with a cell type from the future,
no minor version, invalid metadata, missing, shared and invalid ids) and two of nbdime's and
jupytext's, from their pinned sdists, plus five cells sharing an id (no public file has that).
Each works in the text view and the cell tools with ids that do not change: the same after the
caches are emptied, the same a restarted server (another process) derives, the same in the
file and in the shared document, and the ones the first write stores, as nbformat 4.5 (the
result says so). The module runs with the notebook in its file and in jupyter-collaboration's
shared document.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from public_notebooks import (
    NBFORMAT,
    NBFORMAT_UNUSABLE,
    OTHERS,
    copy_into,
    nbformat_notebook,
    public_notebook,
)

from jupyter_mcp.documents import notebook_format, notebook_view

#: Every test runs with the notebook in its file and in the shared document (see conftest).
BOTH_BACKENDS = True

CASES = {
    **{what: ("nbformat", name) for what, name in NBFORMAT.items()},
    **{what: ("other", name) for what, name in OTHERS.items()},
}


def _source(what: str) -> Path:
    kind, name = CASES[what]
    return nbformat_notebook(name) if kind == "nbformat" else public_notebook(name)


@pytest.fixture(scope="module")
def restarted() -> dict[str, list[str]]:
    """The ids a freshly started interpreter (a restarted server) gives each case's file."""
    paths = {what: _source(what) for what in CASES}
    code = (
        "import json, sys\n"
        "from jupyter_mcp.documents.notebook_format import parse_notebook\n"
        "paths = json.loads(sys.argv[1])\n"
        "print(json.dumps({w: [c.id for c in parse_notebook(open(p, encoding='utf-8').read(),"
        " p)[0].cells] for w, p in paths.items()}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps({w: str(p) for w, p in paths.items()})],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return dict(json.loads(done.stdout.splitlines()[-1]))


def _forget_parses() -> None:
    """Empty the parse and view caches, as a long-running server evicts them."""
    notebook_format._parsed.clear()
    notebook_view._views.clear()


async def stored(path: Path, check: Callable[[dict[str, Any]], bool], timeout: float = 20) -> Any:
    """The notebook file's JSON once ``check`` holds (a shared document saves it shortly after a
    change, rewriting the file in place: a read in between may find it cut short)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
            if check(found):
                return found
        except (ValueError, LookupError):  # cut short, or not yet in the shape checked
            pass
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{path.name} never reached the state wanted")
        await asyncio.sleep(0.05)


async def unchanged(path: Path, before: bytes) -> None:
    """Assert the file still holds ``before``, also after a shared document's save delay."""
    await asyncio.sleep(0.4)
    assert path.read_bytes() == before


def _marker(view: str) -> str:
    """How a code cell starts in ``view`` (``# %%``, ``/* %% */`` …, by the language)."""
    for line in view.splitlines():
        if "%%" in line:
            return line.replace(" [markdown]", "").replace(" [raw]", "")
    return "# %%"


def _without_id(cell: Any) -> Any:
    return {key: value for key, value in cell.items() if key != "id"}


def _known(cell: dict[str, Any]) -> bool:
    return cell["cellType"] in ("code", "markdown", "raw")


@pytest.mark.parametrize("what", list(CASES))
async def test_every_version_reads_with_ids_that_stay_and_its_first_edit_stores_them(
    ok: Any, jp_root_dir: Path, what: str, restarted: dict[str, list[str]], collaboration: bool
) -> None:
    source = _source(what)
    path = copy_into(source, jp_root_dir, "nb.ipynb")
    raw = path.read_bytes()
    theirs = nbformat.reads(raw.decode(), as_version=4)  # nbformat's own reading
    ours, facts = notebook_format.parse_notebook(raw.decode(), "nb.ipynb")
    was_valid = notebook_format.validation_problem(ours) is None

    # When the agent reads it as cells and as text
    listed = await ok("get_notebook_cells", pathInProject="nb.ipynb", limit=500)
    cells = listed["cells"]
    ids = [c["cellId"] for c in cells]
    text = (await ok("get_file_text_by_path", pathInProject="nb.ipynb"))["content"]

    if collaboration and not theirs.cells:
        # jupyter_ydoc gives an empty notebook one empty code cell, as JupyterLab shows it
        assert [(c["cellType"], c["source"]) for c in cells] == [("code", "")]
        return
    # Then it sees nbformat's cells, in both, with valid ids of their own
    assert listed["cellCount"] == len(theirs.cells)
    assert [c["cellType"] for c in cells] == [c.cell_type for c in theirs.cells]
    assert [c["source"] for c in cells if _known(c)] == [
        c.source for c in theirs.cells if c.cell_type in ("code", "markdown", "raw")
    ]
    assert len(set(ids)) == len(ids)
    assert len(notebook_view.parse_view(text, ours).cells) == len(cells)
    # And the ids are those a restarted server gives, also once the caches are emptied
    assert ids == restarted[what]
    _forget_parses()
    again = await ok("get_notebook_cells", pathInProject="nb.ipynb", limit=500)
    assert [c["cellId"] for c in again["cells"]] == ids
    if ids:
        last = await ok("get_notebook_cell", pathInProject="nb.ipynb", cellId=ids[-1])
        assert last["index"] == len(ids) - 1
    # And reading wrote nothing
    await unchanged(path, raw)

    # When the agent edits a cell (or adds one to an empty notebook)
    known = [c for c in cells if _known(c)]
    if known:
        target = known[0]
        answer = await ok(
            "edit_notebook_cell",
            pathInProject="nb.ipynb",
            cellId=target["cellId"],
            source=target["source"] + "\n# edited",
        )
        changed = target["index"]
    else:
        answer = await ok("insert_notebook_cell", pathInProject="nb.ipynb", source="# added")
        ids.append(answer["cellId"])
        changed = answer["index"]
    # Then the result says when this first write upgrades the file
    assert ("upgraded" in answer) == facts.upgraded_on_write, answer
    if (facts.major, facts.minor or 0) < (4, 5):
        assert f"was nbformat {facts.version}" in answer["upgraded"]
    # And the file stores the ids the agent was given, as nbformat 4.5 (or its newer minor)
    saved = await stored(path, lambda nb: [c.get("id") for c in nb["cells"]] == ids)
    assert (saved["nbformat"], saved["nbformat_minor"]) == (4, max(5, facts.minor or 0))
    # And every other cell is as nbformat read it (type, source, outputs, fields of the future)
    again_read = nbformat.reads(json.dumps(saved), as_version=4)
    for index, (mine, before) in enumerate(zip(again_read.cells, theirs.cells, strict=False)):
        if index != changed:
            assert _without_id(mine) == _without_id(before), index
    if was_valid:
        nbformat.validate(nbformat.from_dict(saved))
    # And a second edit is no upgrade any more
    if known:
        second = await ok(
            "edit_notebook_cell",
            pathInProject="nb.ipynb",
            cellId=known[0]["cellId"],
            source=known[0]["source"],
        )
        assert "upgraded" not in second


@pytest.mark.parametrize("what", list(CASES))
async def test_a_text_edit_of_every_version_stores_the_ids_the_cell_tools_gave_out(
    ok: Any, jp_root_dir: Path, what: str, collaboration: bool
) -> None:
    path = copy_into(_source(what), jp_root_dir, "nb.ipynb")
    if collaboration and not nbformat.read(path, as_version=4).cells:
        pytest.skip("jupyter_ydoc shows an empty notebook as one cell that its file lacks")
    _, facts = notebook_format.parse_notebook(path.read_text(encoding="utf-8"), "nb.ipynb")
    listed = await ok("get_notebook_cells", pathInProject="nb.ipynb", limit=500)
    ids = [c["cellId"] for c in listed["cells"]]
    text = (await ok("get_file_text_by_path", pathInProject="nb.ipynb"))["content"]
    # When the agent appends a cell to the text view (its cell marker in the notebook's language)
    added = ("\n" if text else "") + _marker(text) + "\nadded = 1\n"
    answer = await ok("append_file_content", pathInProject="nb.ipynb", text=added)
    # Then the result says when this first write upgrades the file
    assert ("upgraded" in answer) == facts.upgraded_on_write, answer
    # And the old cells keep the ids the cell tools gave out, the new one is last
    saved = await stored(path, lambda nb: len(nb["cells"]) == len(ids) + 1)
    assert [c.get("id") for c in saved["cells"]][: len(ids)] == ids
    assert "".join(saved["cells"][-1]["source"]) == "added = 1"

    # And the cell tools see the same ids afterwards (a shared document reloads the file)
    async def listed_ids() -> list[str]:
        found = await ok("get_notebook_cells", pathInProject="nb.ipynb", limit=500)
        return [c["cellId"] for c in found["cells"]]

    for _ in range(100):
        now = await listed_ids()
        if len(now) == len(ids) + 1:
            break
        await asyncio.sleep(0.1)
    assert now[: len(ids)] == ids
    # And writing the old text back gives the cells back, with their ids
    await ok("rewrite_file_content", pathInProject="nb.ipynb", text=text)
    saved = await stored(path, lambda nb: len(nb["cells"]) == len(ids))
    assert [c.get("id") for c in saved["cells"]] == ids


FIVE_SHARING = {
    "nbformat": 4,
    "nbformat_minor": 5,
    "metadata": {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
    },
    "cells": [
        {
            "cell_type": "code",
            "id": "shared",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": source,
        }
        for source in ("a = 1", "a = 1", "b = 2", "a = 1", "c = 3")
    ],
}


async def test_five_cells_sharing_an_id_are_all_kept_and_made_unique_once(
    ok: Any, jp_root_dir: Path, collaboration: bool
) -> None:
    # Given five cells sharing one id, three of them identical (no public file has this)
    path = jp_root_dir / "five.ipynb"
    path.write_text(json.dumps(FIVE_SHARING, indent=1), encoding="utf-8")
    listed = await ok("get_notebook_cells", pathInProject="five.ipynb")
    ids = [c["cellId"] for c in listed["cells"]]
    # Then all five are there, the first with the id, each other with one of its own
    assert [c["source"] for c in listed["cells"]] == ["a = 1", "a = 1", "b = 2", "a = 1", "c = 3"]
    assert ids[0] == "shared" and len(set(ids)) == 5
    _forget_parses()
    assert [
        c["cellId"] for c in (await ok("get_notebook_cells", pathInProject="five.ipynb"))["cells"]
    ] == ids
    # When the agent edits the fourth, by the id it was given
    answer = await ok("edit_notebook_cell", pathInProject="five.ipynb", cellId=ids[3], source="d")
    assert "upgraded" in answer
    # Then the file stores exactly the ids handed out
    saved = await stored(path, lambda nb: [c["id"] for c in nb["cells"]] == ids)
    assert [c["source"] for c in saved["cells"]][3] == ["d"]


@pytest.mark.parametrize("with_source", [False, True], ids=["as nbformat has it", "with a source"])
async def test_a_cell_type_from_the_future_survives_every_edit(
    ok: Any, fails: Any, mcp_app: Any, jp_root_dir: Path, collaboration: bool, with_source: bool
) -> None:
    path = copy_into(
        nbformat_notebook(NBFORMAT["v4.99 with a cell type from the future"]),
        jp_root_dir,
        "future.ipynb",
    )
    original = json.loads(path.read_text(encoding="utf-8"))
    if with_source:
        # A future cell with a source (nbformat's has none): jupyter-collaboration can share
        # this one, so with it the edits go through the shared document
        next(c for c in original["cells"] if c["cell_type"] == "future cell")["source"] = ["?"]
        path.write_text(json.dumps(original, indent=1), encoding="utf-8")
    from jupyter_mcp.lab.notebooks import open_notebook

    # jupyter-collaboration cannot hold a cell without a source: that notebook stays in its file
    doc = await open_notebook(mcp_app.tool_context, "future.ipynb")
    assert doc.location == ("shared" if collaboration and with_source else "file")
    future_cell = next(c for c in original["cells"] if c["cell_type"] == "future cell")
    future_output = next(c for c in original["cells"] if c.get("id") == "future-11")

    def the_future_kept(nb: dict[str, Any]) -> bool:
        by_id = {c.get("id"): c for c in nb["cells"]}
        return (
            by_id.get("future-10") == future_cell
            and by_id.get("future-11", {}).get("outputs") == future_output["outputs"]
        )

    listed = await ok("get_notebook_cells", pathInProject="future.ipynb", limit=100)
    kinds = {c["cellId"]: c["cellType"] for c in listed["cells"]}
    assert kinds["future-10"] == "future cell"
    # Every cell tool: edits around it keep it byte for byte (as nbformat writes JSON)
    first = listed["cells"][0]["cellId"]
    await ok("edit_notebook_cell", pathInProject="future.ipynb", cellId=first, source="# Title")
    await ok("insert_notebook_cell", pathInProject="future.ipynb", source="x = 1", index=0)
    await ok("move_notebook_cell", pathInProject="future.ipynb", cellId="future-10", toIndex=1)
    await ok("clear_notebook_outputs", pathInProject="future.ipynb", cellIds=[first])
    await stored(path, lambda nb: nb["cells"][1].get("id") == "future-10" and the_future_kept(nb))
    # It cannot be edited (its text cannot say what it holds), nothing changes
    before = await stored(path, the_future_kept)
    message = await fails(
        "edit_notebook_cell", pathInProject="future.ipynb", cellId="future-10", source="x"
    )
    assert "'future cell' cell" in message and "nothing was changed" in message
    # The text view shows it as a raw cell; a text edit elsewhere keeps it
    text = (await ok("get_file_text_by_path", pathInProject="future.ipynb"))["content"]
    shows = "# ?" if with_source else "'future cell' cell"
    assert shows in text
    await ok(
        "replace_specific_text",
        pathInProject="future.ipynb",
        searchText="future_output()",
        replaceText="future_output(2)",
    )
    saved = await stored(path, lambda nb: "future_output(2)" in json.dumps(nb))
    assert the_future_kept(saved)
    # A text that drops it is refused, the file left as it was
    before_bytes = path.read_bytes()
    blocks = text.split("# %%")
    kept = [b for b in blocks if shows not in b]
    message = await fails(
        "rewrite_file_content",
        pathInProject="future.ipynb",
        text="# %%".join(kept).replace("future_output()", "future_output(2)"),
    )
    assert "'future cell' cell" in message and "nothing was written" in message
    await unchanged(path, before_bytes)
    del before
    # Deleting it by id is what removes it
    await ok("delete_notebook_cells", pathInProject="future.ipynb", cellIds=["future-10"])
    saved = await stored(path, lambda nb: "future-10" not in [c.get("id") for c in nb["cells"]])
    assert saved["nbformat_minor"] == 99


async def test_invalid_metadata_is_read_edited_and_kept_as_it_was(
    ok: Any, jp_root_dir: Path, collaboration: bool
) -> None:
    path = copy_into(
        nbformat_notebook(NBFORMAT["v4.5 with invalid metadata"]), jp_root_dir, "meta.ipynb"
    )
    original = json.loads(path.read_text(encoding="utf-8"))
    listed = await ok("get_notebook_cells", pathInProject="meta.ipynb")
    text = (await ok("get_file_text_by_path", pathInProject="meta.ipynb"))["content"]
    assert '"foo"' in text
    answer = await ok(
        "edit_notebook_cell",
        pathInProject="meta.ipynb",
        cellId=listed["cells"][0]["cellId"],
        source='"bar"',
    )
    if not collaboration:
        # nbformat's verdict is told: the edit neither fixed nor worsened it
        assert "metadata" in answer["invalid"] and "left that as it was" in answer["invalid"]
    saved = await stored(path, lambda nb: nb["cells"][0]["source"] == ['"bar"'])
    for key, value in original["metadata"].items():
        assert saved["metadata"][key] == value


@pytest.mark.parametrize("what", list(NBFORMAT_UNUSABLE))
async def test_notebooks_the_tools_cannot_read_are_clear_errors_and_stay_as_they_were(
    fails: Any, jp_root_dir: Path, what: str, collaboration: bool
) -> None:
    path = copy_into(nbformat_notebook(NBFORMAT_UNUSABLE[what]), jp_root_dir, "bad.ipynb")
    before = path.read_bytes()
    calls = [
        ("get_file_text_by_path", {}),
        ("get_notebook_cells", {}),
        ("get_notebook_cell", {"index": 0}),
        ("edit_notebook_cell", {"index": 0, "source": "x"}),
        ("insert_notebook_cell", {"source": "x"}),
        ("delete_notebook_cells", {"cellIds": ["x"]}),
        ("clear_notebook_outputs", {}),
        ("replace_specific_text", {"searchText": "a", "replaceText": "b"}),
        ("append_file_content", {"text": "x"}),
        ("rewrite_file_content", {"text": "# %%\nx\n"}),
    ]
    for tool, extra in calls:
        message = await fails(tool, pathInProject="bad.ipynb", **extra)
        assert message.startswith("bad.ipynb is not a valid notebook: "), (tool, message)
        assert "unexpectedly" not in message
    await unchanged(path, before)


@pytest.mark.parametrize("what", ["v3", "v4.99 with a cell type from the future"])
async def test_a_cell_run_in_an_old_or_newer_notebook_lands_in_the_cell_it_names(
    ok: Any, jp_root_dir: Path, what: str, collaboration: bool
) -> None:
    path = copy_into(nbformat_notebook(NBFORMAT[what]), jp_root_dir, "run.ipynb")
    listed = await ok("get_notebook_cells", pathInProject="run.ipynb", limit=100)
    ids = [c["cellId"] for c in listed["cells"]]
    hello = next(c for c in listed["cells"] if c["source"] == 'print("hello")')
    # When the agent runs one cell, by the id it was given
    run = await ok(
        "execute_notebook_cells",
        pathInProject="run.ipynb",
        cellIds=[hello["cellId"]],
        timeoutMs=120000,
    )
    assert run["status"] == "ok", run
    assert run["cells"][0]["cellId"] == hello["cellId"]
    assert [o["text"] for o in run["cells"][0]["outputs"]] == ["hello\n"]
    # Then the file holds the output in that cell, every cell with the id it was read with
    saved = await stored(
        path,
        lambda nb: (
            [c.get("id") for c in nb["cells"]] == ids
            and nb["cells"][hello["index"]].get("execution_count") is not None
        ),
    )
    assert "".join(saved["cells"][hello["index"]]["outputs"][0]["text"]) == "hello\n"
    if what.startswith("v4.99"):
        future = next(c for c in saved["cells"] if c.get("id") == "future-10")
        assert future == next(
            c
            for c in json.loads(nbformat_notebook(NBFORMAT[what]).read_text())["cells"]
            if c.get("id") == "future-10"
        )
