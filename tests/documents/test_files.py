"""File tools through seed REST on a real Jupyter server."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import nbformat
import pytest


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes, to prove a refused call changed nothing."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


# --- get_file_text_by_path -------------------------------------------------------------


async def test_read_returns_content_and_paths(ok, jp_root_dir):
    (jp_root_dir / "src").mkdir()
    (jp_root_dir / "src" / "helper.py").write_text("def helper():\n    return 'Hello'\n")

    status = await ok("get_file_text_by_path", pathInProject="src/helper.py")

    assert status == {
        "content": "def helper():\n    return 'Hello'\n",
        "path": str(jp_root_dir / "src" / "helper.py"),
        "relativePath": "src/helper.py",
    }


@pytest.mark.parametrize("name", ["notes.py", "a.ipynb"])
async def test_a_read_during_a_jupyter_save_waits_for_the_saved_file(ok, jp_root_dir, name):
    # Jupyter's contents manager (JupyterLab's saves, jupyter-collaboration's) rewrites a file
    # in place behind a backup copy: read in the middle, the file is empty or cut short.
    from jupyter_server.services.contents.fileio import atomic_writing

    def notebook(text: str) -> str:
        nb = nbformat.v4.new_notebook()
        nb.cells.append(nbformat.v4.new_code_cell(text, id="c0"))
        return nbformat.writes(nb)

    old, new = ("x = 1\n", "x = 2\n") if name.endswith(".py") else (notebook("1"), notebook("2"))
    path = jp_root_dir / name
    path.write_text(old)
    loop = asyncio.get_running_loop()
    writing, release = asyncio.Event(), asyncio.Event()

    def save() -> None:
        with atomic_writing(str(path)) as f:
            f.write(new[: len(new) // 3])  # the file holds a third of the new version
            f.flush()
            loop.call_soon_threadsafe(writing.set)
            asyncio.run_coroutine_threadsafe(release.wait(), loop).result()
            f.write(new[len(new) // 3 :])

    saving = loop.run_in_executor(None, save)
    await writing.wait()
    assert path.read_text() == new[: len(new) // 3]  # the torn state a reader could see
    loop.call_later(0.3, release.set)
    status = await ok("get_file_text_by_path", pathInProject=name)
    await saving
    if name.endswith(".py"):
        assert status["content"] == new
    else:
        assert "2" in status["content"] and "1" not in status["content"].split("\n", 1)[1]


async def test_read_accepts_absolute_path_inside_root(ok, jp_root_dir):
    (jp_root_dir / "a.txt").write_text("x")
    status = await ok("get_file_text_by_path", pathInProject=str(jp_root_dir / "a.txt"))
    assert status["relativePath"] == "a.txt"


async def test_read_keeps_crlf_and_unicode(ok, jp_root_dir):
    (jp_root_dir / "w.txt").write_bytes("héllo\r\nwörld ✓\r\n".encode())
    status = await ok("get_file_text_by_path", pathInProject="w.txt")
    assert status["content"] == "héllo\r\nwörld ✓\r\n"


@pytest.mark.parametrize(
    ("setup", "path", "message"),
    [
        (None, "missing.txt", "File not found: missing.txt"),
        ("dir", "folder", "is a directory"),
        ("binary", "image.bin", "binary file"),
        ("latin1", "old.txt", "not UTF-8"),
    ],
)
async def test_read_refusals(fails, jp_root_dir, setup, path, message):
    if setup == "dir":
        (jp_root_dir / path).mkdir()
    elif setup == "binary":
        (jp_root_dir / path).write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    elif setup == "latin1":
        (jp_root_dir / path).write_bytes("caf\xe9".encode("latin-1"))
    assert message in await fails("get_file_text_by_path", pathInProject=path)


async def test_read_refuses_file_over_size_limit(fails, jp_root_dir, mcp_app):
    (jp_root_dir / "big.txt").write_text("x" * 2000)
    mcp_app.max_file_bytes = 1000
    try:
        assert "over the server's limit" in await fails(
            "get_file_text_by_path", pathInProject="big.txt"
        )
    finally:
        mcp_app.max_file_bytes = 16 * 1024 * 1024


# --- path jail ---------------------------------------------------------------------------


@pytest.fixture
def outside(jp_root_dir: Path) -> Path:
    """A secret file next to the project, in a sibling folder sharing the root's name prefix."""
    sibling = jp_root_dir.parent / (jp_root_dir.name + "2")
    sibling.mkdir(exist_ok=True)
    secret = sibling / "secret.txt"
    secret.write_text("top secret")
    return secret


@pytest.mark.parametrize(
    "how", ["dotdot", "absolute", "prefix_sibling", "symlink_file", "symlink_dir", "etc"]
)
async def test_path_jail_refuses_reads_outside_root(fails, jp_root_dir, outside, how):
    if how == "dotdot":
        path = f"../{outside.parent.name}/secret.txt"
    elif how == "absolute":
        path = str(outside)
    elif how == "prefix_sibling":
        path = str(jp_root_dir) + "2/secret.txt"
    elif how == "symlink_file":
        (jp_root_dir / "link.txt").symlink_to(outside)
        path = "link.txt"
    elif how == "symlink_dir":
        (jp_root_dir / "linkdir").symlink_to(outside.parent, target_is_directory=True)
        path = "linkdir/secret.txt"
    else:
        path = "/etc/passwd"
    error = await fails("get_file_text_by_path", pathInProject=path)
    assert "outside the project root" in error
    assert "top secret" not in error


@pytest.mark.parametrize(
    ("tool", "extra"),
    [
        ("rewrite_file_content", {"text": "pwned"}),
        ("create_new_file_with_text", {"text": "pwned"}),
        ("append_file_content", {"text": "pwned"}),
        ("replace_specific_text", {"searchText": "top", "replaceText": "pwned"}),
        ("replace_file_content_at_position", {"startLine": 1, "endLine": 1, "content": "pwned"}),
    ],
)
async def test_path_jail_refuses_writes_outside_root(fails, jp_root_dir, outside, tool, extra):
    (jp_root_dir / "link.txt").symlink_to(outside)
    for path in ("link.txt", f"../{outside.parent.name}/secret.txt", str(outside)):
        assert "outside the project root" in await fails(tool, pathInProject=path, **extra)
    assert outside.read_text() == "top secret"
    assert not (outside.parent / "pwned").exists()


async def test_symlink_inside_root_is_followed(ok, jp_root_dir):
    (jp_root_dir / "real.txt").write_text("real")
    (jp_root_dir / "alias.txt").symlink_to(jp_root_dir / "real.txt")
    assert (await ok("get_file_text_by_path", pathInProject="alias.txt"))["content"] == "real"


# --- rewrite / create ----------------------------------------------------------------------


async def test_rewrite_replaces_content_and_reports_size(ok, jp_root_dir):
    (jp_root_dir / "a.js").write_text("old")
    started = time.perf_counter()
    status = await ok("rewrite_file_content", pathInProject="a.js", text="función ✓")
    request_ms = (time.perf_counter() - started) * 1000
    assert (jp_root_dir / "a.js").read_text() == "función ✓"
    assert status["size"] == len("función ✓".encode())
    assert status["relativePath"] == "a.js"
    # Whole milliseconds of the server's own work: part of what the request took.
    assert isinstance(status["operationTimeMs"], int)
    assert status["operationTimeMs"] <= request_ms + 1


async def test_rewrite_keeps_file_mode(ok, jp_root_dir):
    script = jp_root_dir / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o755)
    await ok("rewrite_file_content", pathInProject="run.sh", text="echo new\n")
    assert script.stat().st_mode & 0o777 == 0o755


async def test_rewrite_missing_file_is_refused(fails, jp_root_dir):
    error = await fails("rewrite_file_content", pathInProject="nope.txt", text="x")
    assert "File not found" in error and "create_new_file_with_text" in error
    assert not (jp_root_dir / "nope.txt").exists()


async def test_rewrite_binary_file_is_refused(fails, jp_root_dir):
    (jp_root_dir / "b.bin").write_bytes(b"\x00\x01\x02")
    assert "binary" in await fails("rewrite_file_content", pathInProject="b.bin", text="x")
    assert (jp_root_dir / "b.bin").read_bytes() == b"\x00\x01\x02"


async def test_create_makes_parents(ok, jp_root_dir):
    status = await ok("create_new_file_with_text", pathInProject="src/utils/new.js", text="x=1\n")
    assert (jp_root_dir / "src/utils/new.js").read_text() == "x=1\n"
    assert status["relativePath"] == "src/utils/new.js"
    assert status["path"] == str(jp_root_dir / "src/utils/new.js")


async def test_create_refuses_existing_file(fails, jp_root_dir):
    (jp_root_dir / "a.txt").write_text("keep me")
    assert "already exists" in await fails(
        "create_new_file_with_text", pathInProject="a.txt", text="x"
    )
    assert (jp_root_dir / "a.txt").read_text() == "keep me"


async def test_create_refuses_parent_that_is_a_file(fails, jp_root_dir):
    (jp_root_dir / "a.txt").write_text("keep me")
    error = await fails("create_new_file_with_text", pathInProject="a.txt/b.txt", text="x")
    assert "not a folder" in error
    assert (jp_root_dir / "a.txt").read_text() == "keep me"


async def test_create_notebook_from_percent_text(ok, jp_root_dir):
    text = "# %% [markdown]\n# # Demo\n\n# %%\nx = 1\nprint(x)\n"
    await ok("create_new_file_with_text", pathInProject="demo.ipynb", text=text)
    nb = nbformat.read(jp_root_dir / "demo.ipynb", as_version=4)
    nbformat.validate(nb)
    assert [(c.cell_type, c.source) for c in nb.cells] == [
        ("markdown", "# Demo"),
        ("code", "x = 1\nprint(x)"),
    ]
    assert nb.metadata.kernelspec.name == "python3"
    read_back = await ok("get_file_text_by_path", pathInProject="demo.ipynb")
    assert read_back["content"] == text


# --- list_files_in_folder ------------------------------------------------------------------


async def test_list_folder(ok, jp_root_dir, outside):
    (jp_root_dir / "src" / "utils" / "config").mkdir(parents=True)
    (jp_root_dir / "src" / "utils" / "helper.js").write_text("")
    (jp_root_dir / "src" / "utils" / "escape").symlink_to(outside)

    status = await ok("list_files_in_folder", pathInProject="src/utils")

    assert status == [
        {"name": "config", "type": "directory", "path": "src/utils/config"},
        {"name": "helper.js", "type": "file", "path": "src/utils/helper.js"},
    ]


@pytest.mark.parametrize("root", ["/", "", "."])
async def test_list_root(ok, jp_root_dir, root):
    (jp_root_dir / "top.txt").write_text("")
    names = [e["name"] for e in await ok("list_files_in_folder", pathInProject=root)]
    assert "top.txt" in names


async def test_list_refusals(fails, jp_root_dir):
    (jp_root_dir / "f.txt").write_text("")
    assert "Folder not found" in await fails("list_files_in_folder", pathInProject="nope")
    assert "not a folder" in await fails("list_files_in_folder", pathInProject="f.txt")
    assert "outside" in await fails("list_files_in_folder", pathInProject="..")


# --- replace_file_content_at_position --------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "end", "content", "offset", "expected"),
    [
        (2, 2, "TWO", None, "one\nTWO\nthree\n"),
        (1, 2, "A\nB", None, "A\nB\nthree\n"),
        (2, 3, "X", None, "one\nX\n"),
        (2, 2, "wo!", 1, "one\ntwo!\nthree\n"),
        (3, 3, "", None, "one\ntwo\n\n"),
        (4, 4, "four", None, "one\ntwo\nthree\nfour"),
    ],
)
async def test_replace_at_position(ok, jp_root_dir, start, end, content, offset, expected):
    (jp_root_dir / "f.txt").write_text("one\ntwo\nthree\n")
    args = {"startLine": start, "endLine": end, "content": content}
    if offset is not None:
        args["offset"] = offset
    assert await ok("replace_file_content_at_position", pathInProject="f.txt", **args) == "ok"
    assert (jp_root_dir / "f.txt").read_text() == expected


async def test_replace_at_position_keeps_crlf(ok, jp_root_dir):
    (jp_root_dir / "w.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    await ok(
        "replace_file_content_at_position",
        pathInProject="w.txt",
        startLine=2,
        endLine=2,
        content="B",
    )
    assert (jp_root_dir / "w.txt").read_bytes() == b"a\r\nB\r\nc\r\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"startLine": 3, "endLine": 2}, "before startLine"),
        ({"startLine": 1, "endLine": 9}, "past the end"),
        ({"startLine": 1, "endLine": 1, "offset": 50}, "past the end of line 1"),
        ({"startLine": 0, "endLine": 1}, "startLine"),
        ({"startLine": "1", "endLine": 1}, "field 'startLine' must be an integer, got string"),
        ({"endLine": 1}, "missing required field 'startLine'"),
    ],
)
async def test_replace_at_position_refusals(fails, jp_root_dir, args, message):
    (jp_root_dir / "f.txt").write_text("one\ntwo\n")
    args.setdefault("content", "X")
    assert message in await fails("replace_file_content_at_position", pathInProject="f.txt", **args)
    assert (jp_root_dir / "f.txt").read_text() == "one\ntwo\n"


# --- append ---------------------------------------------------------------------------------


async def test_append(ok, jp_root_dir):
    (jp_root_dir / "log.txt").write_text("a\n")
    status = await ok("append_file_content", pathInProject="log.txt", text="b\n")
    assert (jp_root_dir / "log.txt").read_text() == "a\nb\n"
    assert status["relativePath"] == "log.txt"


async def test_append_missing_file_is_refused(fails, jp_root_dir):
    assert "File not found" in await fails("append_file_content", pathInProject="no.txt", text="x")
    assert not (jp_root_dir / "no.txt").exists()


async def test_concurrent_appends_are_serialised(call, jp_root_dir):
    (jp_root_dir / "shared.txt").write_text("")
    answers = await asyncio.gather(
        *(
            call("append_file_content", pathInProject="shared.txt", text=f"line {i}\n")
            for i in range(20)
        )
    )
    assert all(a["error"] is None for a in answers)
    lines = (jp_root_dir / "shared.txt").read_text().splitlines()
    assert sorted(lines) == sorted(f"line {i}" for i in range(20))


# --- replace_specific_text --------------------------------------------------------------------


async def test_replace_first_occurrence_case_sensitive(ok, jp_root_dir):
    (jp_root_dir / "h.js").write_text("old Old old")
    status = await ok(
        "replace_specific_text", pathInProject="h.js", searchText="old", replaceText="new"
    )
    assert (jp_root_dir / "h.js").read_text() == "new Old old"
    assert status["replacements"] == 1
    assert status["path"] == str(jp_root_dir / "h.js")


async def test_replace_all(ok, jp_root_dir):
    (jp_root_dir / "h.js").write_text("old Old old")
    status = await ok(
        "replace_specific_text",
        pathInProject="h.js",
        searchText="old",
        replaceText="new",
        replaceAll=True,
    )
    assert (jp_root_dir / "h.js").read_text() == "new Old new"
    assert status["replacements"] == 2


async def test_replace_not_found_changes_nothing(fails, jp_root_dir):
    (jp_root_dir / "h.js").write_text("abc")
    before = os.stat(jp_root_dir / "h.js").st_mtime_ns
    assert "not found" in await fails(
        "replace_specific_text", pathInProject="h.js", searchText="zzz", replaceText="y"
    )
    assert (jp_root_dir / "h.js").read_text() == "abc"
    assert os.stat(jp_root_dir / "h.js").st_mtime_ns == before


async def test_replace_refuses_empty_search_text(fails, jp_root_dir):
    (jp_root_dir / "h.js").write_text("abc")
    assert "searchText" in await fails(
        "replace_specific_text", pathInProject="h.js", searchText="", replaceText="y"
    )


# --- notebooks through the text view -----------------------------------------------------


def make_notebook(path: Path) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["custom"] = {"keep": True}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Analysis\n\nSome *text*"),
        nbformat.v4.new_code_cell(
            "x = 1\nprint(x)",
            execution_count=1,
            outputs=[nbformat.v4.new_output("stream", name="stdout", text="1\n")],
        ),
        nbformat.v4.new_code_cell(
            "%matplotlib inline\ny = x + 1\ny",
            execution_count=2,
            outputs=[
                nbformat.v4.new_output(
                    "execute_result", data={"text/plain": "2"}, execution_count=2
                )
            ],
        ),
    ]
    nb.cells[1].metadata["tags"] = ["setup"]
    nbformat.write(nb, path)
    return nb


async def test_notebook_reads_as_percent_script(ok, jp_root_dir):
    make_notebook(jp_root_dir / "nb.ipynb")
    content = (await ok("get_file_text_by_path", pathInProject="nb.ipynb"))["content"]
    assert content == (
        "# %% [markdown]\n# # Analysis\n#\n# Some *text*\n\n"
        "# %%\nx = 1\nprint(x)\n\n"
        "# %%\n# %matplotlib inline\ny = x + 1\ny\n"
    )


async def test_notebook_round_trip_of_unchanged_text_changes_nothing(ok, jp_root_dir):
    make_notebook(jp_root_dir / "nb.ipynb")
    raw = (jp_root_dir / "nb.ipynb").read_bytes()
    mtime = os.stat(jp_root_dir / "nb.ipynb").st_mtime_ns
    content = (await ok("get_file_text_by_path", pathInProject="nb.ipynb"))["content"]
    await ok("rewrite_file_content", pathInProject="nb.ipynb", text=content)
    assert (jp_root_dir / "nb.ipynb").read_bytes() == raw
    assert os.stat(jp_root_dir / "nb.ipynb").st_mtime_ns == mtime


async def test_notebook_edit_keeps_outputs_ids_and_metadata(ok, jp_root_dir):
    original = make_notebook(jp_root_dir / "nb.ipynb")
    content = (await ok("get_file_text_by_path", pathInProject="nb.ipynb"))["content"]
    edited = content.replace("y = x + 1", "y = x + 41") + "\n# %%\nz = y * 2\n"

    await ok("rewrite_file_content", pathInProject="nb.ipynb", text=edited)

    nb = nbformat.read(jp_root_dir / "nb.ipynb", as_version=4)
    nbformat.validate(nb)
    assert len(nb.cells) == 4
    # Untouched cells: byte-for-byte the same, outputs and tags included.
    assert nb.cells[0] == original.cells[0]
    assert nb.cells[1] == original.cells[1]
    # The edited cell keeps its id and outputs, as an edit in JupyterLab would.
    assert nb.cells[2].id == original.cells[2].id
    assert nb.cells[2].source == "%matplotlib inline\ny = x + 41\ny"
    assert nb.cells[2].outputs == original.cells[2].outputs
    # The new cell is a fresh code cell.
    assert nb.cells[3].source == "z = y * 2"
    assert nb.cells[3].outputs == []
    assert nb.metadata["custom"] == {"keep": True}


async def test_notebook_line_tools_work_on_the_view(ok, jp_root_dir):
    original = make_notebook(jp_root_dir / "nb.ipynb")
    await ok(
        "replace_specific_text",
        pathInProject="nb.ipynb",
        searchText="print(x)",
        replaceText="print(x * 10)",
    )
    await ok("append_file_content", pathInProject="nb.ipynb", text="\n# %% [markdown]\n# The end\n")
    nb = nbformat.read(jp_root_dir / "nb.ipynb", as_version=4)
    assert nb.cells[1].source == "x = 1\nprint(x * 10)"
    assert nb.cells[1].outputs == original.cells[1].outputs
    assert nb.cells[2] == original.cells[2]
    assert (nb.cells[3].cell_type, nb.cells[3].source) == ("markdown", "The end")


async def test_notebook_cell_deletion_and_reorder(ok, jp_root_dir):
    original = make_notebook(jp_root_dir / "nb.ipynb")
    content = (await ok("get_file_text_by_path", pathInProject="nb.ipynb"))["content"]
    blocks = content.split("\n\n# %%")
    # Drop the markdown cell and swap the two code cells.
    reordered = "# %%" + blocks[2] + "\n\n# %%" + blocks[1]
    await ok("rewrite_file_content", pathInProject="nb.ipynb", text=reordered)
    nb = nbformat.read(jp_root_dir / "nb.ipynb", as_version=4)
    assert [c.id for c in nb.cells] == [original.cells[2].id, original.cells[1].id]
    assert nb.cells[0].outputs == original.cells[2].outputs


async def test_invalid_notebook_json_is_refused(fails, jp_root_dir):
    (jp_root_dir / "bad.ipynb").write_text("{not json")
    assert "not a valid notebook" in await fails("get_file_text_by_path", pathInProject="bad.ipynb")
    assert "not a valid notebook" in await fails(
        "append_file_content", pathInProject="bad.ipynb", text="x"
    )
    assert (jp_root_dir / "bad.ipynb").read_text() == "{not json"


async def test_no_temp_files_left_behind(ok, jp_root_dir):
    (jp_root_dir / "a.txt").write_text("a")
    await ok("rewrite_file_content", pathInProject="a.txt", text="b")
    await ok("append_file_content", pathInProject="a.txt", text="c")
    assert sorted(p.name for p in jp_root_dir.iterdir()) == ["a.txt"]


async def test_result_is_json_not_string(call, jp_root_dir):
    (jp_root_dir / "a.txt").write_text("a")
    answer = await call("get_file_text_by_path", pathInProject="a.txt")
    assert isinstance(answer["status"], dict)
    proxied = await call("get_file_text_by_path", _surface="api", pathInProject="a.txt")
    assert json.loads(proxied["status"]) == answer["status"]
