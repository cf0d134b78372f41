"""MCP resources on a real server through the official SDK client, both protocol eras.

Files, notebooks, cells, output pictures and kernel variables as ``jupyter-mcp://`` resources:
templates, ``resources/list`` in pages (open JupyterLab documents first, then the project's
files as ``find_files_by_name_substring`` orders them), reads that follow the tools' policies,
``completion/complete`` of the templates' arguments, and the ``resource_link`` blocks of tool
results.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import nbformat
import pytest
from lab_windows import until
from mcp import MCPError
from mcp_types import ResourceTemplateReference
from notebook_files import PNG, write_notebook

MODES = ["legacy", "auto"]
#: The not-found code of each era (2026-07-28 standardises on invalid params).
NOT_FOUND = {"legacy": -32002, "auto": -32602}


def notebook(root: Path, name: str = "n.ipynb") -> tuple[Path, list[str]]:
    """A notebook of a markdown cell, a failing code cell and a picture; its cell ids."""
    code = nbformat.v4.new_code_cell("x = 1\n1 / 0", execution_count=1)
    code.outputs = [
        nbformat.v4.new_output(
            "error", ename="ZeroDivisionError", evalue="division by zero", traceback=["Zero"]
        )
    ]
    plot = nbformat.v4.new_code_cell("plot()", execution_count=2)
    plot.outputs = [
        nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})
    ]
    path = root / name
    return path, write_notebook(path, [nbformat.v4.new_markdown_cell("# Title"), code, plot])


async def all_resources(client: Any) -> tuple[list[Any], int]:
    """Every listed resource, following the cursors, and how many pages it took."""
    found, cursor, pages = [], None, 0
    while True:
        page = await client.list_resources(cursor=cursor, cache_mode="refresh")
        pages += 1
        found.extend(page.resources)
        cursor = page.next_cursor
        if cursor is None:
            return found, pages


# --- templates and reads ------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_templates_and_reads_of_every_kind(connect, jp_root_dir, mode):
    # Given a project with a file, a binary file and a notebook
    (jp_root_dir / "src").mkdir()
    (jp_root_dir / "src" / "app.py").write_text("print('hi')\n")
    (jp_root_dir / "logo.png").write_bytes(base64.b64decode(PNG))
    _, (title, code, plot) = notebook(jp_root_dir, "sub dir/n.ipynb")
    async with connect(mode) as client:
        # Then the server says it has resources, subscriptions and completions
        capabilities = client.server_capabilities
        assert capabilities.resources.subscribe is True
        assert capabilities.resources.list_changed is True
        assert capabilities.completions is not None
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == [
            "jupyter-mcp://file/{+path}",
            "jupyter-mcp://notebook/{+path}",
            "jupyter-mcp://notebook/{+path}/cell/{cellId}",
            "jupyter-mcp://notebook/{+path}/cell/{cellId}/output/{index}",
            "jupyter-mcp://kernel/{+path}/variables",
        ]
        # A text file reads as its text with a type by extension
        read = await client.read_resource("jupyter-mcp://file/src/app.py")
        assert read.contents[0].text == "print('hi')\n"
        assert read.contents[0].mime_type == "text/x-python"
        # A binary file as its bytes
        read = await client.read_resource("jupyter-mcp://file/logo.png")
        assert base64.b64decode(read.contents[0].blob) == base64.b64decode(PNG)
        assert read.contents[0].mime_type == "image/png"
        # A notebook as a file: its percent-format script (the view every text tool gives)
        read = await client.read_resource("jupyter-mcp://file/sub%20dir/n.ipynb")
        view = read.contents[0].text
        assert "# %% [markdown]" in view and "1 / 0" in view
        tool = await client.call_tool("get_file_text_by_path", {"pathInProject": "sub dir/n.ipynb"})
        assert json.loads(tool.content[0].text)["content"] == view
        # ... %2F spells the same path
        again = await client.read_resource("jupyter-mcp://file/sub%20dir%2Fn.ipynb")
        assert again.contents[0].text == view
        # A notebook as cells, as get_notebook_cells answers (every cell)
        read = await client.read_resource("jupyter-mcp://notebook/sub%20dir/n.ipynb")
        cells = json.loads(read.contents[0].text)
        assert read.contents[0].mime_type == "application/json"
        assert cells["path"] == "sub dir/n.ipynb" and cells["cellCount"] == 3
        assert [c["cellId"] for c in cells["cells"]] == [title, code, plot]
        assert cells["cells"][1]["outputs"][0]["ename"] == "ZeroDivisionError"
        # One cell, as get_notebook_cell answers
        read = await client.read_resource(f"jupyter-mcp://notebook/sub%20dir/n.ipynb/cell/{code}")
        cell = json.loads(read.contents[0].text)
        assert cell["cellId"] == code and cell["index"] == 1 and cell["source"] == "x = 1\n1 / 0"
        # A picture output as its PNG (the imageUri the tools give)
        uri = f"jupyter-mcp://notebook/sub%20dir/n.ipynb/cell/{plot}/output/0"
        read = await client.read_resource(uri)
        assert read.contents[0].blob == PNG and read.contents[0].mime_type == "image/png"


@pytest.mark.parametrize("mode", MODES)
async def test_bad_uris_get_clear_errors_with_each_eras_code(connect, jp_root_dir, mode):
    (jp_root_dir / "a.txt").write_text("a\n")
    _, (_, code, plot) = notebook(jp_root_dir)
    outside = jp_root_dir.parent / "secret.txt"
    outside.write_text("secret\n")
    async with connect(mode) as client:
        cases = {
            "jupyter-mcp://file/missing.txt": "missing.txt does not exist",
            "jupyter-mcp://nothing": "is not a resource of this server",
            "test://static-text": "is not a resource of this server",
            f"jupyter-mcp://notebook/n.ipynb/cell/{code}x": "has no cell with id",
            f"jupyter-mcp://notebook/n.ipynb/cell/{plot}/output/5": "has no output 5",
            "jupyter-mcp://kernel/n.ipynb/variables": "has no running kernel",
        }
        for uri, message in cases.items():
            with pytest.raises(MCPError, match=message) as caught:
                await client.read_resource(uri)
            assert caught.value.error.code == NOT_FOUND[mode], uri
            assert caught.value.error.data == {"uri": uri}
        # Refusals are invalid parameters that say why, and read nothing
        refused = {
            "jupyter-mcp://file/../secret.txt": "outside the project root",
            f"jupyter-mcp://file/{outside}": "outside the project root",
            f"jupyter-mcp://notebook/n.ipynb/cell/{code}/output/0": "is not a picture",
            "jupyter-mcp://file/": "is not a resource",
        }
        for uri, message in refused.items():
            with pytest.raises(MCPError, match=message) as caught:
                await client.read_resource(uri)
            assert "secret" not in caught.value.error.message.replace("secret.txt", "")


async def test_a_connection_reads_only_the_resources_of_its_tool_sets(
    connect, jp_root_dir, mcp_app
):
    # Given a notebook and a file
    (jp_root_dir / "a.txt").write_text("a\n")
    notebook(jp_root_dir)
    # When the connection chose the files tool set only
    async with connect("legacy", query="toolsets=files") as client:
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.name for t in templates] == ["project-file"]
        # Then notebooks are listed as files (their percent text), never as cells
        listed, _ = await all_resources(client)
        assert {r.uri for r in listed} == {"jupyter-mcp://file/a.txt", "jupyter-mcp://file/n.ipynb"}
        with pytest.raises(MCPError, match="not among the chosen toolsets") as caught:
            await client.read_resource("jupyter-mcp://notebook/n.ipynb")
        assert caught.value.error.code == -32602
        assert "# %%" in (await client.read_resource("jupyter-mcp://file/n.ipynb")).contents[0].text
    # And a server that disables the cell reader refuses notebook resources to everyone
    mcp_app.disabled_tools = ["get_notebook_cells"]
    async with connect("auto") as client:
        with pytest.raises(MCPError, match="get_notebook_cells is disabled on this server"):
            await client.read_resource("jupyter-mcp://notebook/n.ipynb")
        listed, _ = await all_resources(client)
        assert "jupyter-mcp://file/n.ipynb" in {r.uri for r in listed}


async def test_variables_of_a_running_kernel(connect, jp_root_dir):
    notebook(jp_root_dir)
    async with connect("legacy") as client:
        ran = await client.call_tool(
            "execute_code_in_kernel", {"pathInProject": "n.ipynb", "code": "answer = 42"}
        )
        assert not ran.is_error, ran.content[0].text
        read = await client.read_resource("jupyter-mcp://kernel/n.ipynb/variables")
        variables = json.loads(read.contents[0].text)
        assert {"name": "answer", "type": "int", "value": "42"} in variables


# --- the list ---------------------------------------------------------------------------------


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


async def test_the_list_pages_project_files_in_the_name_search_order(connect, jp_root_dir, ok):
    # Given 2,400 files in a git repository that ignores build/
    git(jp_root_dir, "init", "-q")
    (jp_root_dir / ".gitignore").write_text("build/\n")
    (jp_root_dir / "build").mkdir()
    (jp_root_dir / "build" / "out.txt").write_text("ignored\n")
    for folder in range(24):
        d = jp_root_dir / f"pkg{folder:02d}"
        d.mkdir()
        for n in range(100):
            (d / f"m{n:03d}.py").write_text("")
    notebook(jp_root_dir)
    async with connect("legacy") as client:
        listed, pages = await all_resources(client)
    found = await ok("find_files_by_name_substring", nameSubstring=".", maxResults=5000)
    # Then every file is listed once, in pages of at most 1000 ...
    assert pages == 3
    uris = [r.uri for r in listed]
    assert len(uris) == len(set(uris)) == 2402  # the files, .gitignore and the notebook
    assert not any("build/" in u for u in uris)
    # ... shorter paths first, as the name search ranks names that all match alike
    names = [r.title for r in listed]
    assert names[:3] == ["n.ipynb", ".gitignore", "pkg00/m000.py"]
    by_search = [e["path"] for e in found]
    assert sorted(names) == sorted(by_search)
    # ... a notebook as its cells, with its name and type
    nb = next(r for r in listed if r.title == "n.ipynb")
    assert nb.uri == "jupyter-mcp://notebook/n.ipynb" and nb.mime_type == "application/json"
    py = next(r for r in listed if r.title == "pkg03/m010.py")
    assert py.name == "m010.py" and py.mime_type == "text/x-python" and py.size == 0


async def test_open_documents_come_first(connect, jp_root_dir, open_window, bridge):
    (jp_root_dir / "a.txt").write_text("a\n")
    (jp_root_dir / "zz").mkdir()
    (jp_root_dir / "zz" / "late.py").write_text("x = 1\n")
    notebook(jp_root_dir, "zz/open.ipynb")
    window = await open_window()
    window.state(
        focus=True,
        active={"path": "zz/late.py", "type": "file", "dirty": True},
        open=[
            {"path": "zz/open.ipynb", "type": "notebook", "dirty": False},
            {"path": "zz/late.py", "type": "file", "dirty": True},
        ],
    )
    await until(lambda: bridge.current() is not None and bridge.current().active is not None)
    async with connect("auto") as client:
        listed, _ = await all_resources(client)
    assert [r.uri for r in listed[:2]] == [
        "jupyter-mcp://file/zz/late.py",
        "jupyter-mcp://notebook/zz/open.ipynb",
    ]
    assert listed[0].description == "Open in JupyterLab, with unsaved changes"
    assert [r.uri for r in listed].count("jupyter-mcp://file/zz/late.py") == 1
    assert "jupyter-mcp://file/a.txt" in [r.uri for r in listed[2:]]


async def test_unsaved_edits_in_a_window_are_what_a_file_resource_reads(
    connect, jp_root_dir, open_window, bridge
):
    (jp_root_dir / "a.py").write_text("on disk\n")
    window = await open_window()
    window.handlers["documentText"] = lambda p: {"path": p["path"], "text": "typed, unsaved\n"}
    window.state(focus=True, open=[{"path": "a.py", "type": "file", "dirty": True}])
    await until(lambda: bridge.current() is not None and bridge.current().open)
    async with connect("legacy") as client:
        read = await client.read_resource("jupyter-mcp://file/a.py")
    assert read.contents[0].text == "typed, unsaved\n"
    assert [r["method"] for r in window.requests] == ["documentText"]
    # Saved (not dirty any more), the file on disk is what it reads
    window.state(open=[{"path": "a.py", "type": "file", "dirty": False}])
    await until(lambda: not bridge.current().open[0].dirty)
    async with connect("auto") as client:
        read = await client.read_resource("jupyter-mcp://file/a.py")
    assert read.contents[0].text == "on disk\n"


# --- completion -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_completion_of_template_arguments(connect, jp_root_dir, mode):
    git(jp_root_dir, "init", "-q")
    (jp_root_dir / ".gitignore").write_text("secret/\n")
    (jp_root_dir / "secret").mkdir()
    notebook(jp_root_dir, "secret/hidden.ipynb")
    (jp_root_dir / "src").mkdir()
    (jp_root_dir / "src" / "main.py").write_text("")
    (jp_root_dir / "setup.py").write_text("")
    for n in range(150):
        (jp_root_dir / "src" / f"mod{n:03d}.py").write_text("")
    _, ids = notebook(jp_root_dir, "src/analysis.ipynb")
    notebook(jp_root_dir, "study.ipynb")

    def ref(kind: str) -> ResourceTemplateReference:
        return ResourceTemplateReference(type="ref/resource", uri=kind)

    async with connect(mode) as client:
        file_t = "jupyter-mcp://file/{+path}"
        cell_t = "jupyter-mcp://notebook/{+path}/cell/{cellId}"
        # A path completes one folder at a time, ignore rules kept
        got = (await client.complete(ref(file_t), {"name": "path", "value": "s"})).completion
        assert got.values == ["setup.py", "src/", "study.ipynb"]
        assert got.total == 3 and got.has_more is False
        # At most 100 values, with the total said
        got = (await client.complete(ref(file_t), {"name": "path", "value": "src/mod"})).completion
        assert len(got.values) == 100 and got.total == 150 and got.has_more is True
        assert got.values[0] == "src/mod000.py"
        # Where a notebook is meant, only notebooks (and folders with notebooks)
        got = (await client.complete(ref(cell_t), {"name": "path", "value": "s"})).completion
        assert got.values == ["src/", "study.ipynb"]
        got = (await client.complete(ref(cell_t), {"name": "path", "value": "src/"})).completion
        assert got.values == ["src/analysis.ipynb"]
        # A cell id by the notebook's ids
        got = (
            await client.complete(
                ref(cell_t),
                {"name": "cellId", "value": ""},
                context_arguments={"path": "src/analysis.ipynb"},
            )
        ).completion
        assert got.values == ids
        got = (
            await client.complete(
                ref(cell_t),
                {"name": "cellId", "value": ids[1][:6]},
                context_arguments={"path": "src/analysis.ipynb"},
            )
        ).completion
        assert got.values == [i for i in ids if i.startswith(ids[1][:6])]
        # An unknown template or argument is an error that names it
        with pytest.raises(MCPError, match="No resource template"):
            await client.complete(ref("jupyter-mcp://other/{x}"), {"name": "x", "value": ""})
        with pytest.raises(MCPError, match="has no argument 'nope'"):
            await client.complete(ref(file_t), {"name": "nope", "value": ""})


# --- links in tool results ---------------------------------------------------------------------


async def test_tool_results_link_the_files_and_cells_they_name(connect, jp_root_dir):
    (jp_root_dir / "a.py").write_text("x = 1\n")
    _, (_, code, _) = notebook(jp_root_dir)
    async with connect("legacy") as client:
        read = await client.call_tool("get_file_text_by_path", {"pathInProject": "a.py"})
        links = [b for b in read.content if b.type == "resource_link"]
        assert [(link.uri, link.name, link.mime_type) for link in links] == [
            ("jupyter-mcp://file/a.py", "a.py", "text/x-python")
        ]
        # A linked resource reads as the tool's answer does
        linked = await client.read_resource(links[0].uri)
        assert linked.contents[0].text == "x = 1\n"
        cell = await client.call_tool(
            "get_notebook_cell", {"pathInProject": "n.ipynb", "cellId": code}
        )
        uris = [b.uri for b in cell.content if b.type == "resource_link"]
        assert uris == [
            "jupyter-mcp://notebook/n.ipynb",
            f"jupyter-mcp://notebook/n.ipynb/cell/{code}",
        ]
        found = await client.call_tool("find_files_by_name_substring", {"nameSubstring": "a.py"})
        assert [b.uri for b in found.content if b.type == "resource_link"] == [
            "jupyter-mcp://file/a.py"
        ]
        failed = await client.call_tool("get_file_text_by_path", {"pathInProject": "nope.py"})
        assert failed.is_error and [b.type for b in failed.content] == ["text"]
    # A connection without the notebooks tool set gets no links it could not follow
    async with connect("legacy", query="toolsets=files,kernels") as client:
        ran = await client.call_tool(
            "get_kernel_variables", {"pathInProject": "n.ipynb", "names": []}
        )
        uris = [b.uri for b in ran.content if b.type == "resource_link"]
        assert uris == ["jupyter-mcp://kernel/n.ipynb/variables"]


async def test_a_results_link_reuses_the_path_its_tool_resolved(connect, jp_root_dir, monkeypatch):
    """The link to the file a call read names the real path the tool found: the path is
    resolved once per call, not again for its link (ToolContext.resolved_in_call)."""
    from jupyter_mcp.core import context

    (jp_root_dir / "a.py").write_text("x = 1\n")
    resolved: list[str] = []
    resolve = context.resolve_in_root

    def counted(root: Path, path: str, **options: Any) -> Path:
        resolved.append(path)
        return resolve(root, path, **options)

    monkeypatch.setattr(context, "resolve_in_root", counted)
    async with connect("legacy") as client:
        resolved.clear()
        read = await client.call_tool("get_file_text_by_path", {"pathInProject": "a.py"})

    assert [b.uri for b in read.content if b.type == "resource_link"] == ["jupyter-mcp://file/a.py"]
    assert resolved == ["a.py"]


async def test_a_git_tools_link_is_resolved_in_its_thread_not_on_the_event_loop(
    connect, jp_root_dir, monkeypatch
):
    """git's tools name a file by a path of their own (a link kept as the link): the real
    path of their answer's link is found in the tool's worker thread, once, and the loop,
    where each system call of a realpath lets a busy thread hold it, resolves nothing."""
    import threading

    from jupyter_mcp.core import context

    git(jp_root_dir, "init", "-q")
    (jp_root_dir / "a.py").write_text("x = 1\n")
    git(jp_root_dir, "add", "a.py")
    git(jp_root_dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    (jp_root_dir / "a.py").write_text("x = 2\n")
    on_the_loop: list[str] = []
    resolve = context.resolve_in_root

    def watched(root: Path, path: str, **options: Any) -> Path:
        if threading.current_thread() is threading.main_thread():
            on_the_loop.append(path)
        return resolve(root, path, **options)

    monkeypatch.setattr(context, "resolve_in_root", watched)
    async with connect("legacy") as client:
        for tool in ("get_file_history", "get_file_diff"):
            answer = await client.call_tool(tool, {"pathInProject": "a.py"})
            links = [b.uri for b in answer.content if b.type == "resource_link"]
            assert links == ["jupyter-mcp://file/a.py"], tool
        # A path the jail refuses gets no link, as before
        refused = await client.call_tool("get_file_history", {"pathInProject": "../x.py"})
        assert refused.is_error
    assert on_the_loop == []


async def test_a_results_link_asks_whether_its_file_is_one_in_the_tools_thread(
    connect, jp_root_dir, monkeypatch
):
    """Whether a link's path is a file is found in the tool's worker thread once it is done,
    not on the loop afterwards (ToolContext.is_file_in_call); a path that is not a file gets
    no file link."""
    import threading

    (jp_root_dir / "a.py").write_text("x = 1\n")
    (jp_root_dir / "d").mkdir()
    real_file = (jp_root_dir / "a.py").resolve()
    asked_on_the_loop: list[Path] = []
    is_file = Path.is_file

    def watched(self: Path) -> bool:
        if threading.current_thread() is threading.main_thread() and self == real_file:
            asked_on_the_loop.append(self)
        return is_file(self)

    monkeypatch.setattr(Path, "is_file", watched)
    async with connect("legacy") as client:
        read = await client.call_tool("get_file_text_by_path", {"pathInProject": "a.py"})
        listed = await client.call_tool("list_files_in_folder", {"pathInProject": "d"})

    assert [b.uri for b in read.content if b.type == "resource_link"] == ["jupyter-mcp://file/a.py"]
    assert not listed.is_error
    assert [b for b in listed.content if b.type == "resource_link"] == []
    assert asked_on_the_loop == []
