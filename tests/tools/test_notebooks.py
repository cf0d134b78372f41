"""The notebook tools on a real server: read cells with outputs, edit them by id, faults.

Every refused call leaves the notebook file byte for byte as it was. The module runs twice:
with the notebook in its file, and with jupyter-collaboration enabled, where each notebook is
changed in the server's shared document (which saves it to the file shortly after).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from mcp import Client, MCPError
from notebook_files import PNG, on_disk

#: Every test runs with the notebook in its file and in the shared document (see conftest).
BOTH_BACKENDS = True


async def unchanged(files: list[Path], before: list[bytes]) -> None:
    """Assert ``files`` still hold ``before``, also after a shared document's save delay."""
    await asyncio.sleep(0.4)
    assert [f.read_bytes() for f in files] == before


def _notebook(root: Path, name: str = "n.ipynb", *, minor: int = 5) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    code = nbformat.v4.new_code_cell("print('hi')\n1 / 0", execution_count=3)
    code.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="hi\n"),
        nbformat.v4.new_output(
            "error",
            ename="ZeroDivisionError",
            evalue="division by zero",
            traceback=["\x1b[31mZeroDivisionError\x1b[0m: division by zero"],
        ),
    ]
    plot = nbformat.v4.new_code_cell("plot()", execution_count=4)
    plot.outputs = [
        nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})
    ]
    nb.cells = [nbformat.v4.new_markdown_cell("# Title"), code, plot]
    nb.nbformat_minor = minor
    if minor < 5:
        for cell in nb.cells:
            del cell["id"]
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nbformat.writes(nb))
    return path


def _ids(path: Path) -> list[str]:
    return [c.id for c in nbformat.read(path, as_version=4).cells]


async def test_reads_cells_with_outputs_and_pages(ok: Any, jp_root_dir: Path) -> None:
    _notebook(jp_root_dir)
    found = await ok("get_notebook_cells", pathInProject="n.ipynb")
    assert found["path"] == "n.ipynb" and found["cellCount"] == 3
    assert found["kernel"] is None  # no session yet
    markdown, code, plot = found["cells"]
    assert markdown["cellType"] == "markdown" and markdown["source"] == "# Title"
    assert code["executionCount"] == 3
    stream, error = code["outputs"]
    assert stream == {
        "outputType": "stream",
        "name": "stdout",
        "text": "hi\n",
        "mimeTypes": ["text/plain"],
        "truncated": False,
    }
    assert error["ename"] == "ZeroDivisionError" and "\x1b" not in error["text"]
    assert plot["outputs"][0]["text"] == "<Figure>"
    assert plot["outputs"][0]["imageUri"].startswith("jupyter-mcp://notebook/n.ipynb/cell/")
    page = await ok("get_notebook_cells", pathInProject="n.ipynb", start=1, limit=1)
    assert [c["index"] for c in page["cells"]] == [1] and page["nextStart"] == 2
    bare = await ok("get_notebook_cells", pathInProject="n.ipynb", includeOutputs=False)
    assert "outputs" not in bare["cells"][1]


async def test_the_kernel_of_a_notebook_with_a_session_is_given(
    ok: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    _notebook(jp_root_dir)
    model = await jp_serverapp.session_manager.create_session(
        path="n.ipynb", name="n.ipynb", type="notebook", kernel_name="python3"
    )
    try:
        found = await ok("get_notebook_cells", pathInProject="n.ipynb", limit=1)
        assert found["kernel"]["kernelId"] == model["kernel"]["id"]
        assert found["kernel"]["name"] == "python3"
    finally:
        await jp_serverapp.session_manager.delete_session(model["id"])


async def test_one_cell_by_id_or_index_the_id_winning(ok: Any, jp_root_dir: Path) -> None:
    path = _notebook(jp_root_dir)
    ids = _ids(path)
    by_id = await ok("get_notebook_cell", pathInProject="n.ipynb", cellId=ids[2], index=0)
    assert by_id["cellId"] == ids[2] and by_id["index"] == 2
    by_index = await ok("get_notebook_cell", pathInProject="n.ipynb", index=1)
    assert by_index["cellId"] == ids[1]


async def test_edits_by_id_carry_ids_and_a_diff(ok: Any, jp_root_dir: Path) -> None:
    path = _notebook(jp_root_dir)
    ids = _ids(path)
    inserted = await ok(
        "insert_notebook_cell", pathInProject="n.ipynb", source="x = 1", afterCellId=ids[0]
    )
    assert inserted["index"] == 1
    await on_disk(
        path, lambda nb: [c.id for c in nb.cells] == [ids[0], inserted["cellId"], *ids[1:]]
    )
    top = await ok(
        "insert_notebook_cell",
        pathInProject="n.ipynb",
        source="intro",
        cellType="raw",
        index=0,
    )
    assert top["index"] == 0
    end = await ok("insert_notebook_cell", pathInProject="n.ipynb", source="end")
    assert end["index"] == 5

    edited = await ok(
        "edit_notebook_cell",
        pathInProject="n.ipynb",
        cellId=ids[1],
        searchText="1 / 0",
        replaceText="1 / 1",
        expectedSource="print('hi')\n1 / 0",
    )
    assert edited["cellId"] == ids[1] and edited["index"] == 3
    assert "-1 / 0" in edited["diff"] and "+1 / 1" in edited["diff"]
    stored = await on_disk(path, lambda nb: nb.cells[3].source == "print('hi')\n1 / 1")
    cell = stored.cells[3]
    assert cell.outputs and cell.execution_count == 3  # an edit keeps the outputs, as in Lab

    retyped = await ok("edit_notebook_cell", pathInProject="n.ipynb", index=3, cellType="markdown")
    assert retyped["diff"].startswith("cellType: code -> markdown")
    cell = (await on_disk(path, lambda nb: nb.cells[3].cell_type == "markdown")).cells[3]
    assert "outputs" not in cell

    moved = await ok("move_notebook_cell", pathInProject="n.ipynb", cellId=ids[2], toIndex=0)
    assert moved == {"cellId": ids[2], "index": 0}
    cleared = await ok("clear_notebook_outputs", pathInProject="n.ipynb")
    assert cleared == {"cleared": 1, "cellIds": [ids[2]]}
    deleted = await ok(
        "delete_notebook_cells", pathInProject="n.ipynb", cellIds=[top["cellId"], end["cellId"]]
    )
    assert deleted["deleted"] == 2
    order = [ids[2], ids[0], inserted["cellId"], ids[1]]
    stored = await on_disk(path, lambda nb: [c.id for c in nb.cells] == order)
    nbformat.validate(stored)
    assert stored.cells[0].outputs == [] and stored.cells[0].execution_count is None


async def test_a_notebook_without_ids_gets_them_on_its_first_edit(
    ok: Any, jp_root_dir: Path
) -> None:
    path = _notebook(jp_root_dir, "old.ipynb", minor=4)
    listed = await ok("get_notebook_cells", pathInProject="old.ipynb", includeOutputs=False)
    ids = [c["cellId"] for c in listed["cells"]]
    await ok("edit_notebook_cell", pathInProject="old.ipynb", cellId=ids[0], source="# New")
    stored = await on_disk(path, lambda nb: nb.cells[0].source == "# New")
    assert stored.nbformat_minor == 5 and [c.id for c in stored.cells] == ids
    nbformat.validate(stored)


FAULTS = [
    ({"pathInProject": "nope.ipynb"}, "Notebook not found: nope.ipynb"),
    ({"pathInProject": "notes.txt"}, "notes.txt is not a notebook"),
    ({"pathInProject": "broken.ipynb"}, "broken.ipynb is not a valid notebook"),
    ({"pathInProject": "n.ipynb", "cellId": "nope"}, "has no cell with id 'nope'"),
    ({"pathInProject": "n.ipynb", "index": 9}, "Cell index 9 is out of range"),
    ({}, "give the notebook's pathInProject"),
]


@pytest.mark.parametrize(("where", "message"), FAULTS)
async def test_faults_are_clear_errors_and_change_nothing(
    fails: Any, jp_root_dir: Path, where: dict[str, Any], message: str
) -> None:
    path = _notebook(jp_root_dir)
    (jp_root_dir / "notes.txt").write_text("not a notebook")
    (jp_root_dir / "broken.ipynb").write_text('{"cells": [')
    files = [path, jp_root_dir / "notes.txt", jp_root_dir / "broken.ipynb"]
    before = [f.read_bytes() for f in files]
    calls = [
        ("edit_notebook_cell", {"source": "x"}),
        ("get_notebook_cell", {}),
        ("move_notebook_cell", {"toIndex": 0}),
    ]
    for tool, extra in calls:
        args = {**extra, **where}
        if tool != "get_notebook_cell" and "cellId" not in args and "index" not in args:
            args["index"] = 0
        assert message in await fails(tool, **args), (tool, args)
    await unchanged(files, before)


async def test_bad_edits_are_refused_and_change_nothing(fails: Any, jp_root_dir: Path) -> None:
    path = _notebook(jp_root_dir)
    ids = _ids(path)
    before = path.read_bytes()
    stale = await fails(
        "edit_notebook_cell",
        pathInProject="n.ipynb",
        cellId=ids[1],
        source="new",
        expectedSource="print('old')",
    )
    assert "changed since it was read" in stale and stale.endswith("print('hi')\n1 / 0")
    refusals = [
        ({"cellId": ids[1], "searchText": "absent", "replaceText": "x"}, "was not found"),
        ({"cellId": ids[1], "searchText": "i", "replaceText": "x"}, "occurs 2 times"),
        ({"cellId": ids[1], "source": "a", "searchText": "b", "replaceText": "c"}, "not both"),
        ({"cellId": ids[1], "searchText": "b"}, "needs replaceText"),
        ({"cellId": ids[1]}, "Nothing to change"),
        ({"cellId": ids[1], "source": "x = '\ud800'"}, "unpaired surrogate U+D800"),
    ]
    for args, message in refusals:
        assert message in await fails("edit_notebook_cell", pathInProject="n.ipynb", **args)
    assert "out of range" in await fails(
        "insert_notebook_cell", pathInProject="n.ipynb", source="x", index=4
    )
    assert "no cell with id 'nope'" in await fails(
        "insert_notebook_cell", pathInProject="n.ipynb", source="x", afterCellId="nope"
    )
    assert "cellIds is empty" in await fails(
        "delete_notebook_cells", pathInProject="n.ipynb", cellIds=[]
    )
    assert "nothing was deleted" in await fails(
        "delete_notebook_cells", pathInProject="n.ipynb", cellIds=[ids[0], "nope"]
    )
    assert "toIndex 3 is out of range" in await fails(
        "move_notebook_cell", pathInProject="n.ipynb", cellId=ids[0], toIndex=3
    )
    assert "nothing was cleared" in await fails(
        "clear_notebook_outputs", pathInProject="n.ipynb", cellIds=["nope"]
    )
    await unchanged([path], [before])


async def test_an_edit_given_the_hash_of_the_source_it_read(ok: Any, jp_root_dir: Path) -> None:
    import hashlib

    path = _notebook(jp_root_dir)
    digest = "sha256:" + hashlib.sha256(b"# Title").hexdigest()
    await ok(
        "edit_notebook_cell", pathInProject="n.ipynb", index=0, source="# T", expectedSource=digest
    )
    await on_disk(path, lambda nb: nb.cells[0].source == "# T")


async def test_read_only_mode_lists_the_read_tools_only(mcp_app: Any) -> None:
    ctx = mcp_app.tool_context
    names = {"get_notebook_cells", "get_notebook_cell"}
    edits = {
        "insert_notebook_cell",
        "edit_notebook_cell",
        "delete_notebook_cells",
        "move_notebook_cell",
        "clear_notebook_outputs",
    }
    visible = {t.name for t in mcp_app.registry.visible(ctx)}
    assert names | edits <= visible
    ctx.settings.read_only = True
    try:
        visible = {t.name for t in mcp_app.registry.visible(ctx)}
        assert names <= visible and not edits & visible
    finally:
        ctx.settings.read_only = False


# --- standard MCP: pictures, resources, two clients at once ------------------------------


async def test_pictures_come_as_image_content_and_as_resources(
    connect: Any, jp_root_dir: Path
) -> None:
    path = _notebook(jp_root_dir, "sub dir/p.ipynb")
    plot_id = _ids(path)[2]
    async with connect() as client:
        result = await client.call_tool(
            "get_notebook_cell", {"pathInProject": "sub dir/p.ipynb", "index": 2}
        )
        assert not result.is_error
        kinds = [block.type for block in result.content]
        assert kinds == ["text", "image", "resource_link", "resource_link"]
        assert result.content[1].data == PNG and result.content[1].mime_type == "image/png"
        cell = json.loads(result.content[0].text)
        uri = cell["outputs"][0]["imageUri"]
        assert uri == f"jupyter-mcp://notebook/sub%20dir/p.ipynb/cell/{plot_id}/output/0"
        templates = await client.list_resource_templates()
        assert any("{cellId}" in t.uri_template for t in templates.resource_templates)
        read = await client.read_resource(uri)
        assert read.contents[0].blob == PNG and read.contents[0].mime_type == "image/png"
        with pytest.raises(MCPError, match="is not a picture"):
            await client.read_resource(uri.replace(plot_id, _ids(path)[1]))
        with pytest.raises(MCPError, match="Resource not found"):
            await client.read_resource("jupyter-mcp://nothing")


async def test_two_clients_editing_two_notebooks_never_cross(
    connect: Any, jp_root_dir: Path
) -> None:
    paths = {name: _notebook(jp_root_dir, f"{name}.ipynb") for name in ("a", "b")}

    async def agent(name: str) -> None:
        async with connect() as client:
            for i in range(8):
                result = await client.call_tool(
                    "insert_notebook_cell",
                    {"pathInProject": f"{name}.ipynb", "source": f"{name} {i}"},
                )
                assert not result.is_error, result.content

    await asyncio.gather(agent("a"), agent("b"))
    for name, path in paths.items():
        wanted = [f"{name} {i}" for i in range(8)]
        await on_disk(path, lambda nb, wanted=wanted: [c.source for c in nb.cells[3:]] == wanted)


# --- where the document lives, and a running cell in it ---------------------------------


async def test_the_document_is_shared_with_collaboration_else_the_file(
    mcp_app: Any, jp_root_dir: Path, collaboration: bool
) -> None:
    from jupyter_mcp.lab.notebooks import open_notebook

    _notebook(jp_root_dir)
    doc = await open_notebook(mcp_app.tool_context, "n.ipynb")
    assert doc.location == ("shared" if collaboration else "file")


async def test_a_file_caught_mid_save_is_read_from_its_shared_document(
    ok: Any,
    fails: Any,
    mcp_app: Any,
    jp_root_dir: Path,
    collaboration: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from jupyter_mcp.documents.notebook_view import read_notebook

    path = _notebook(jp_root_dir)
    ids = _ids(path)
    await ok("get_notebook_cells", pathInProject="n.ipynb")  # with collaboration: loads its room
    # Given the file caught in the middle of a save: Jupyter rewrites it in place, so a read
    # then finds it empty (done here by the read itself: the collaboration's file watcher
    # would take a truly emptied file for an outside change)
    files = mcp_app.tool_context.services.notebooks.files

    async def mid_save(path: Path, shown: str) -> Any:
        return read_notebook("", shown)

    monkeypatch.setattr(files, "open", mid_save)
    edit = {"pathInProject": "n.ipynb", "cellId": ids[1], "source": "x = 2"}
    if not collaboration:
        # Then with only the file, its error stands
        assert "n.ipynb is not a valid notebook" in await fails("edit_notebook_cell", **edit)
        return
    # Then with a shared document loaded, the edit goes to it, and reaches the file
    await ok("edit_notebook_cell", **edit)
    monkeypatch.undo()
    await on_disk(path, lambda nb: nb.cells[1].source == "x = 2")


async def test_a_file_caught_mid_save_after_it_was_opened_is_read_from_its_shared_document(
    ok: Any,
    fails: Any,
    mcp_app: Any,
    jp_root_dir: Path,
    collaboration: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A 20-agent bench run: a read found the file whole, then read it again (is every cell
    # shareable?) just as its room began a save, and answered 'it is not JSON'.
    from jupyter_mcp.documents.notebook_view import read_notebook
    from jupyter_mcp.lab import live_notebooks

    path = _notebook(jp_root_dir)
    ids = _ids(path)
    await ok("get_notebook_cells", pathInProject="n.ipynb")  # with collaboration: loads its room

    def mid_save(ctx: Any, path: Path, shown: str, **options: Any) -> Any:
        return read_notebook("", shown)  # the second read finds the file emptied by a save

    monkeypatch.setattr(live_notebooks, "load_notebook", mid_save)
    edit = {"pathInProject": "n.ipynb", "cellId": ids[1], "source": "x = 3"}
    if not collaboration:
        # Only a server with shared documents reads the file twice: nothing changes here
        await ok("edit_notebook_cell", **edit)
        return
    # Then with a shared document loaded, the edit goes to it, and reaches the file
    await ok("edit_notebook_cell", **edit)
    read = await ok("get_notebook_cell", pathInProject="n.ipynb", cellId=ids[1])
    assert read["source"] == "x = 3"
    monkeypatch.undo()
    await on_disk(path, lambda nb: nb.cells[1].source == "x = 3")


async def test_a_running_cell_streams_into_the_document(
    ok: Any, mcp_app: Any, jp_root_dir: Path
) -> None:
    from jupyter_mcp.lab.notebooks import open_notebook

    path = _notebook(jp_root_dir)
    cell_id = _ids(path)[1]
    doc = await open_notebook(mcp_app.tool_context, "n.ipynb")
    await doc.run_started(cell_id)
    running = await ok("get_notebook_cell", pathInProject="n.ipynb", cellId=cell_id)
    assert running["executionCount"] is None and running["outputs"] == []
    for i in range(5):
        await doc.output(cell_id, {"output_type": "stream", "name": "stdout", "text": f"{i}\n"})
    await doc.run_finished(cell_id, 12)
    done = await ok("get_notebook_cell", pathInProject="n.ipynb", cellId=cell_id)
    assert done["executionCount"] == 12
    assert [o["text"] for o in done["outputs"]] == ["0\n1\n2\n3\n4\n"]
    stored = await on_disk(path, lambda nb: nb.cells[1].get("execution_count") == 12)
    assert stored.cells[1].outputs[0].text == "0\n1\n2\n3\n4\n"
    nbformat.validate(stored)


# --- reading a long answer in result windows ----------------------------------------------


async def _read_windows(client: Client, arguments: dict[str, Any], between: Any = None) -> Any:
    """The whole answer read window by window (``between()`` runs after the first), or the
    error text of the window that failed."""
    text, offset = "", 0
    while True:
        result = await client.call_tool("get_notebook_cells", {**arguments, "resultStart": offset})
        if result.is_error:
            return result.content[0].text
        window = result.content[0].text
        text, offset = text + window, offset + len(window)
        if between is not None and offset == len(window):
            await between()
        if len(result.content) == 1:  # the last window has no note about the rest
            return json.loads(text)


async def test_a_notebook_changed_between_windows_is_never_answered_from_the_old_text(
    connect: Any, jp_root_dir: Path, collaboration: bool
) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"x{i} = {i}  # {'.' * 300}") for i in range(60)]
    (jp_root_dir / "long.ipynb").write_text(nbformat.writes(nb))
    ids = [c.id for c in nb.cells]
    arguments = {"pathInProject": "long.ipynb", "limit": 100}
    async with connect() as client:
        whole = await _read_windows(client, arguments)
        assert [c["cellId"] for c in whole["cells"]] == ids  # several windows, one answer
        assert await _read_windows(client, arguments) == whole

        async def edit() -> None:
            result = await client.call_tool(
                "edit_notebook_cell",
                {"pathInProject": "long.ipynb", "cellId": ids[59], "source": "x59 = 'new'"},
            )
            assert not result.is_error, result.content

        said = await _read_windows(client, arguments, between=edit)
        assert isinstance(said, str) and "changed since its first window" in said
        fresh = await _read_windows(client, arguments)
        assert fresh["cells"][59]["source"] == "x59 = 'new'"
        assert fresh["cells"][:59] == whole["cells"][:59]
        if not collaboration:
            # A write by anyone else (here: straight into the file) is seen the same way.
            async def write() -> None:
                nb.cells[59].source = "x59 = 'written'"
                (jp_root_dir / "long.ipynb").write_text(nbformat.writes(nb))

            said = await _read_windows(client, arguments, between=write)
            assert isinstance(said, str) and "changed since its first window" in said
            fresh = await _read_windows(client, arguments)
            assert fresh["cells"][59]["source"] == "x59 = 'written'"
