"""Search tools through a real Jupyter server, and the project index directly."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_mcp.core.context import ToolContext
from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.project.events import open_events
from jupyter_mcp.search.engine import LocalSearch, WorkerSearch
from jupyter_mcp.search.index import ProjectIndex
from jupyter_mcp.services import build_services
from jupyter_mcp.tools.search import search_in_files_content

LIMIT = 64 * 1024


def inotify_usable() -> bool:
    """False where the kernel refuses an inotify instance (not Linux, or the limit is hit)."""
    try:
        open_events().close()
    except OSError:
        return False
    return True


needs_inotify = pytest.mark.skipif(not inotify_usable(), reason="inotify is not available")


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    """The shared server config, with a small search size limit to test skipping."""
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_mcp": True},
            "allow_unauthenticated_access": False,
        },
        "JupyterMCP": {"search_max_file_bytes": LIMIT},
    }


def write(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def paths(status: list[dict[str, Any]]) -> list[str]:
    # Every entry is a file: a client may read entry["path"] without checking.
    return [entry["path"] for entry in status]


def notebook(*cells: tuple[str, str]) -> str:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    makers = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell}
    nb.cells = [makers[kind](source) for kind, source in cells]
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="streamed outputs here\n")]
    return nbformat.writes(nb)


# ------------------------------------------------------------------ content search


async def test_matches_carry_paths_line_column_and_preview(ok, jp_root_dir):
    # Given two files containing the text, one of them twice
    write(jp_root_dir, "src/utils/helper.js", "// x\nexport function helper() {}\n")
    write(jp_root_dir, "test/helper.test.js", "function helper\nfunction helper again\n")
    write(jp_root_dir, "other.txt", "nothing here\n")
    # When searching
    status = await ok("search_in_files_content", searchText="function helper")
    # Then each file is listed once, sorted, with relative and absolute paths and each match
    assert status == [
        {
            "path": "src/utils/helper.js",
            "absolutePath": str(jp_root_dir / "src/utils/helper.js"),
            "matches": [
                {"line": 2, "column": 7, "preview": "export function helper() {}"},
            ],
        },
        {
            "path": "test/helper.test.js",
            "absolutePath": str(jp_root_dir / "test/helper.test.js"),
            "matches": [
                {"line": 1, "column": 0, "preview": "function helper"},
                {"line": 2, "column": 0, "preview": "function helper again"},
            ],
        },
    ]
    assert await ok("search_in_files_content", searchText="absent needle") == []


async def test_ignore_rules_root_nested_negation_and_info_exclude(ok, jp_root_dir):
    # Given a git repository with ignore rules at several levels
    subprocess.run(["git", "init", "-q", str(jp_root_dir)], check=True)
    write(jp_root_dir, ".gitignore", "*.log\n!keep.log\nbuild/\n")
    write(jp_root_dir, ".git/info/exclude", "excluded.txt\n")
    write(jp_root_dir, "pkg/.gitignore", "secret.txt\n!important.log\n")
    for rel in [
        "a.txt",
        "debug.log",
        "keep.log",
        "build/out.txt",
        "sub/build/deep.txt",
        "excluded.txt",
        "pkg/secret.txt",
        "pkg/important.log",
        "pkg/other.log",
        "secret.txt",
    ]:
        write(jp_root_dir, rel, "needle\n")
    # And files inside VCS folders
    write(jp_root_dir, ".git/needle.txt", "needle\n")
    write(jp_root_dir, ".hg/store.txt", "needle\n")
    write(jp_root_dir, ".ipynb_checkpoints/a-checkpoint.txt", "needle\n")
    # When searching
    found = paths(await ok("search_in_files_content", searchText="needle"))
    # Then ignored files are skipped and negations bring files back, deeper rules winning
    assert found == ["a.txt", "keep.log", "pkg/important.log", "secret.txt"]
    # And name search sees the same files
    names = paths(await ok("find_files_by_name_substring", nameSubstring=".log"))
    assert sorted(names) == ["keep.log", "pkg/important.log"]


async def test_binary_and_large_files_are_skipped(ok, jp_root_dir):
    # Given a text file, a binary file and a file over the size limit, all with the text
    write(jp_root_dir, "text.txt", "needle\n")
    write(jp_root_dir, "blob.bin", b"\x00\x01needle\x02")
    write(jp_root_dir, "huge.txt", "needle\n" + "x" * (LIMIT + 10))
    # When searching the content, only the text file matches
    assert paths(await ok("search_in_files_content", searchText="needle")) == ["text.txt"]
    # While name search still lists binary and large files
    listed = paths(await ok("find_files_by_name_substring", nameSubstring="."))
    assert {"text.txt", "blob.bin", "huge.txt"} <= set(listed)


async def test_notebooks_are_searched_in_their_cell_text(ok, jp_root_dir):
    # Given a notebook whose cells contain a line break and quotes (escaped in the JSON)
    source = 'greeting = "hello"\nprint(greeting)'
    write(
        jp_root_dir,
        "nb.ipynb",
        notebook(("code", source), ("markdown", "Some *notes* here")),
    )
    raw = (jp_root_dir / "nb.ipynb").read_text()
    assert '\\"hello\\"' in raw and "\\n" in raw
    view = (await ok("get_file_text_by_path", pathInProject="nb.ipynb"))["content"]
    lines = view.split("\n")
    # When searching across the line break and the quotes as the user sees them
    status = await ok("search_in_files_content", searchText='"hello"\nprint(greeting)')
    # Then the notebook matches at the line of its text view
    assert paths(status) == ["nb.ipynb"]
    match = status[0]["matches"][0]
    assert lines[match["line"] - 1] == 'greeting = "hello"'
    assert match["column"] == len("greeting = ")
    assert match["preview"] == 'greeting = "hello"'
    notes = await ok("search_in_files_content", searchText="*notes*")
    assert lines[notes[0]["matches"][0]["line"] - 1].endswith("Some *notes* here")
    # And JSON keys and outputs do not match
    for noise in ['"cell_type"', "cell_type", "outputs", "execution_count", "streamed outputs"]:
        assert await ok("search_in_files_content", searchText=noise) == [], noise


async def test_regex_and_case_options(ok, fails, jp_root_dir):
    write(jp_root_dir, "a.py", "Value = 1\nvalue2 = 22\nVALUE3 = 333\n")
    write(jp_root_dir, "b.txt", "École et école\n")
    # Case-sensitive by default
    status = await ok("search_in_files_content", searchText="value")
    assert [m["line"] for m in status[0]["matches"]] == [2]
    # Case-insensitive, ASCII and not
    status = await ok("search_in_files_content", searchText="value", caseSensitive=False)
    assert [m["line"] for m in status[0]["matches"]] == [1, 2, 3]
    status = await ok("search_in_files_content", searchText="éCOLE", caseSensitive=False)
    assert [m["column"] for m in status[0]["matches"]] == [0, 9]
    # Regex, with ^ at line starts, and a literal search does not treat text as a pattern
    status = await ok("search_in_files_content", searchText=r"^\w+\d = \d+$", regex=True)
    assert [(m["line"], m["preview"]) for m in status[0]["matches"]] == [
        (2, "value2 = 22"),
        (3, "VALUE3 = 333"),
    ]
    assert await ok("search_in_files_content", searchText=r"\d+") == []
    status = await ok(
        "search_in_files_content", searchText="value\\d", regex=True, caseSensitive=False
    )
    assert [m["line"] for m in status[0]["matches"]] == [2, 3]
    # An invalid regex is a clear error
    error = await fails("search_in_files_content", searchText="(unclosed", regex=True)
    assert "Invalid regular expression" in error and "(unclosed" in error


async def test_include_and_exclude_globs(ok, jp_root_dir):
    for rel in ["src/a.py", "src/b.js", "tests/test_a.py", "docs/c.md"]:
        write(jp_root_dir, rel, "needle\n")
    assert paths(await ok("search_in_files_content", searchText="needle", include=["*.py"])) == [
        "src/a.py",
        "tests/test_a.py",
    ]
    assert paths(await ok("search_in_files_content", searchText="needle", include="src/**")) == [
        "src/a.py",
        "src/b.js",
    ]
    assert paths(
        await ok("search_in_files_content", searchText="needle", exclude=["tests/", "*.md"])
    ) == ["src/a.py", "src/b.js"]
    assert paths(
        await ok(
            "search_in_files_content", searchText="needle", include=["*.py"], exclude=["tests/"]
        )
    ) == ["src/a.py"]


async def test_max_results_cuts_and_says_so(ok, jp_root_dir):
    write(jp_root_dir, "a.txt", "x\nx\nx\n")
    write(jp_root_dir, "b.txt", "x\n")
    write(jp_root_dir, "c.txt", "x\n")
    # Under the limit (or exactly at it): no flag
    for limit in (5, 6):
        status = await ok("search_in_files_content", searchText="x", maxResults=limit)
        assert paths(status) == ["a.txt", "b.txt", "c.txt"]
        assert all("truncated" not in entry and "maxResults" not in entry for entry in status)
    # Cut inside a file: every entry is a file, the last one carries the flag
    status = await ok("search_in_files_content", searchText="x", maxResults=2)
    assert paths(status) == ["a.txt"]
    assert len(status[0]["matches"]) == 2
    assert status[-1]["truncated"] is True and status[-1]["maxResults"] == 2
    # Cut exactly at a file boundary: the next file with a match is what was cut
    status = await ok("search_in_files_content", searchText="x", maxResults=4)
    assert paths(status) == ["a.txt", "b.txt"]
    assert "truncated" not in status[0]
    assert status[1]["truncated"] is True and status[1]["maxResults"] == 4
    assert len(status[1]["matches"]) == 1
    # Name search flags its last entry the same way, and not when nothing was cut
    status = await ok("find_files_by_name_substring", nameSubstring=".txt", maxResults=2)
    assert paths(status) == ["a.txt", "b.txt"]
    assert "truncated" not in status[0]
    assert status[1]["truncated"] is True and status[1]["maxResults"] == 2
    status = await ok("find_files_by_name_substring", nameSubstring=".txt", maxResults=3)
    assert len(status) == 3 and all("truncated" not in entry for entry in status)


async def test_unicode_text_and_names(ok, jp_root_dir):
    write(jp_root_dir, "données/résumé.md", "ñandú ☕ café\nnaïve\n")
    status = await ok("search_in_files_content", searchText="café")
    assert status == [
        {
            "path": "données/résumé.md",
            "absolutePath": str(jp_root_dir / "données/résumé.md"),
            "matches": [{"line": 1, "column": 8, "preview": "ñandú ☕ café"}],
        }
    ]
    names = await ok("find_files_by_name_substring", nameSubstring="RÉSUMÉ")
    assert names[0]["directory"] == "données" and names[0]["name"] == "résumé.md"


async def test_symlink_loop_and_links_out_of_the_root(ok, jp_root_dir, tmp_path_factory):
    # Given a folder link back to the root (a loop), links pointing outside the root,
    # a dangling link and a file link inside the root
    outside = tmp_path_factory.mktemp("outside")
    (outside / "secret.txt").write_text("needle outside\n")
    write(jp_root_dir, "real/inside.txt", "needle inside\n")
    os.symlink(jp_root_dir, jp_root_dir / "real" / "loop")
    os.symlink(outside, jp_root_dir / "out_dir")
    os.symlink(outside / "secret.txt", jp_root_dir / "out_file.txt")
    os.symlink(jp_root_dir / "missing.txt", jp_root_dir / "dangling.txt")
    os.symlink(jp_root_dir / "real" / "inside.txt", jp_root_dir / "alias.txt")
    # When searching, the walk ends and nothing outside the root is reported
    found = paths(await ok("search_in_files_content", searchText="needle"))
    assert found == ["alias.txt", "real/inside.txt"]
    listed = paths(await ok("find_files_by_name_substring", nameSubstring="secret"))
    assert listed == []


async def test_name_search_order_and_files_only(ok, jp_root_dir):
    for rel in [
        "deep/nested/more/helper.py",
        "helper.py",
        "src/helpers.py",
        "src/myhelper.py",
        "HELPER.PY.bak",
        "a/helper.py",
    ]:
        write(jp_root_dir, rel, "")
    (jp_root_dir / "helper.py.d").mkdir()
    status = await ok("find_files_by_name_substring", nameSubstring="Helper.py")
    assert paths(status) == [
        "helper.py",
        "a/helper.py",
        "deep/nested/more/helper.py",
        "HELPER.PY.bak",
        "src/myhelper.py",
    ]
    assert status[0] == {
        "path": "helper.py",
        "name": "helper.py",
        "directory": "",
        "absolutePath": str(jp_root_dir / "helper.py"),
    }
    assert status[2]["directory"] == "deep/nested/more"


async def test_bad_arguments_are_refused(fails):
    assert "searchText" in await fails("search_in_files_content")
    assert "searchText" in await fails("search_in_files_content", searchText=5)
    assert "searchText" in await fails("search_in_files_content", searchText="")
    assert "maxResults" in await fails("search_in_files_content", searchText="x", maxResults=0)
    assert "regex" in await fails("search_in_files_content", searchText="x", regex="yes")
    assert "include" in await fails("search_in_files_content", searchText="x", include=[1])
    assert "nameSubstring" in await fails("find_files_by_name_substring")
    assert "nameSubstring" in await fails("find_files_by_name_substring", nameSubstring=["a"])


async def test_later_searches_see_files_changed_by_tools_and_by_others(ok, jp_root_dir):
    # Given a first search that built the index
    write(jp_root_dir, "old.txt", "token one\n")
    assert paths(await ok("search_in_files_content", searchText="token")) == ["old.txt"]
    # When the file tools create and rewrite files, the next search sees them at once
    await ok("create_new_file_with_text", pathInProject="new/made.txt", text="token two\n")
    await ok("rewrite_file_content", pathInProject="old.txt", text="gone\n")
    assert paths(await ok("search_in_files_content", searchText="token")) == ["new/made.txt"]
    # And so do changes made by others: same-size rewrite, delete, new ignore rule
    (jp_root_dir / "new" / "made.txt").write_text("token six\n")
    status = await ok("search_in_files_content", searchText="token")
    assert status[0]["matches"][0]["preview"] == "token six"
    write(jp_root_dir, "x/y/z.txt", "token deep\n")
    assert paths(await ok("search_in_files_content", searchText="token")) == [
        "new/made.txt",
        "x/y/z.txt",
    ]
    write(jp_root_dir, ".gitignore", "x/\n")
    assert paths(await ok("search_in_files_content", searchText="token")) == ["new/made.txt"]
    (jp_root_dir / ".gitignore").unlink()
    os.remove(jp_root_dir / "new" / "made.txt")
    assert paths(await ok("search_in_files_content", searchText="token")) == ["x/y/z.txt"]


async def test_proxy_surface_returns_the_array_as_text(call, jp_root_dir):
    write(jp_root_dir, "a.txt", "needle\n")
    answer = await call("search_in_files_content", _surface="api", searchText="needle")
    assert json.loads(answer["status"])[0]["path"] == "a.txt"


# ------------------------------------------------------------------ the index directly


@pytest.mark.parametrize("use_events", [pytest.param(True, marks=needs_inotify), False])
def test_index_stays_fresh_with_and_without_events(tmp_path, use_events):
    # Given an index (file events, or stat checks only)
    write(tmp_path, "a.txt", "alpha\n")
    write(tmp_path, "d/b.txt", "beta\n")
    index = ProjectIndex(tmp_path, use_events=use_events)
    try:
        index.refresh()
        assert index.watching is use_events
        assert [e.rel for e in index.files()] == ["a.txt", "d/b.txt"]
        # When files are rewritten at once with the same size, added, removed, ignored
        (tmp_path / "a.txt").write_text("gamma\n")
        write(tmp_path, "d/e/c.txt", "delta\n")
        (tmp_path / "d" / "b.txt").unlink()
        index.refresh()
        texts = {e.rel: text for e, text in index.searchable()}
        # Then the index has the disk's state
        assert texts == {"a.txt": "gamma\n", "d/e/c.txt": "delta\n"}
        write(tmp_path, "d/.gitignore", "e/\n")
        index.refresh()
        assert [e.rel for e in index.files()] == ["a.txt", "d/.gitignore"]
    finally:
        index.close()


def test_without_inotify_the_index_falls_back_to_stat_checks(tmp_path, monkeypatch):
    # Given a system without inotify_simple (not Linux)
    import jupyter_mcp.project.events as file_events

    monkeypatch.setattr(file_events, "INotify", None)
    write(tmp_path, "a.txt", "alpha\n")
    index = ProjectIndex(tmp_path)
    try:
        index.refresh()
        # Then the index still works, on stat checks, and sees later changes
        assert not index.watching
        write(tmp_path, "b/c.txt", "beta\n")
        (tmp_path / "a.txt").write_text("gamma longer\n")
        index.refresh()
        assert {e.rel: text for e, text in index.searchable()} == {
            "a.txt": "gamma longer\n",
            "b/c.txt": "beta\n",
        }
    finally:
        index.close()


def test_index_keeps_texts_over_budget_on_disk(tmp_path):
    # Given an in-process context whose cache budget is smaller than the files
    write(tmp_path, "a.txt", "needle " * 100)
    write(tmp_path, "b.txt", "needle")
    ctx = ToolContext(root_dir=tmp_path)
    ctx.services = build_services(ctx)
    ctx.settings.search_cache_bytes = 10
    try:
        # Then search still reads the uncached files
        found = search_in_files_content(ctx, searchText="needle", maxResults=1000)
        assert [entry["path"] for entry in found] == ["a.txt", "b.txt"]
        assert len(found[0]["matches"]) == 100
        backend = ctx.services.search.current
        assert isinstance(backend, LocalSearch) and backend.cache_bytes == 10
        cached = {e.rel: e.text for e in backend.index.files()}
        assert cached == {"a.txt": None, "b.txt": "needle"}
    finally:
        ctx.services.search.close()


def test_a_small_cache_budget_gives_the_same_results_as_a_large_one(tmp_path):
    # Given files of which only a few fit a small cache budget (ASCII and not, a notebook)
    for i in range(12):
        write(tmp_path, f"d{i % 3}/f{i:02}.txt", f"Needle {i}\n" + "filler line\n" * (i * 20))
    write(tmp_path, "u.txt", "ÉCOLE needle école\n")
    write(tmp_path, "nb.ipynb", notebook(("code", "needle = 1"), ("markdown", "NEEDLE")))
    queries = [
        {"searchText": "needle"},
        {"searchText": "needle", "caseSensitive": False},
        {"searchText": r"^Needle \d+$", "regex": True},
        {"searchText": "école", "caseSensitive": False},
        {"searchText": "needle", "caseSensitive": False, "maxResults": 5},
    ]
    small = LocalSearch(tmp_path, 1024 * 1024, cache_bytes=600)
    large = LocalSearch(tmp_path, 1024 * 1024)
    try:
        for query in queries:
            expected = large.run("content", dict(query))
            assert expected, query
            # Then each search, the first and a repeated one, finds the same as the big cache
            assert small.run("content", dict(query)) == expected, query
            assert small.run("content", dict(query)) == expected, query
        # And most texts were left on disk: the budget held
        cached = [e for e in small.index.files() if e.text is not None]
        assert 0 < len(cached) < len(small.index.files()) - 3
        assert sum(len(e.text or "") + len(e.folded or "") for e in cached) <= 600
        # And a change to an uncached file is seen by the next search
        write(tmp_path, "d2/f11.txt", "changed\n")
        query = {"searchText": "Needle 11"}
        assert small.run("content", dict(query)) == []
    finally:
        small.close()
        large.close()


async def test_cache_budget_is_a_server_setting(ok, mcp_app, jp_root_dir):
    # Given a server whose search cache budget is set smaller than the files
    write(jp_root_dir, "a.txt", "needle " * 200)
    write(jp_root_dir, "b.txt", "needle\n")
    assert mcp_app.tool_context.settings.search_cache_bytes == 256 * 1024 * 1024
    mcp_app.search_cache_bytes = 100
    assert mcp_app.tool_context.settings.search_cache_bytes == 100
    # When searching, the worker runs with that budget and still finds every match
    status = await ok("search_in_files_content", searchText="needle")
    assert paths(status) == ["a.txt", "b.txt"]
    assert len(status[0]["matches"]) == 200
    backend = mcp_app.tool_context.services.search.current
    assert isinstance(backend, WorkerSearch) and backend.cache_bytes == 100


async def test_a_dead_search_worker_is_replaced(ok, mcp_app, jp_root_dir):
    # Given a server whose search worker process has died
    write(jp_root_dir, "a.txt", "needle\n")
    assert paths(await ok("search_in_files_content", searchText="needle")) == ["a.txt"]
    backend = mcp_app.tool_context.services.search.current
    assert isinstance(backend, WorkerSearch)
    backend._proc.kill()
    backend._proc.wait()
    # When searching again, a new worker answers
    write(jp_root_dir, "b.txt", "needle\n")
    assert paths(await ok("search_in_files_content", searchText="needle")) == ["a.txt", "b.txt"]


def test_fifo_and_socket_files_are_never_opened(tmp_path):
    write(tmp_path, "a.txt", "needle\n")
    os.mkfifo(tmp_path / "pipe")
    index = ProjectIndex(tmp_path)
    try:
        index.refresh()  # would hang opening the fifo
        assert [e.rel for e in index.files()] == ["a.txt"]
    finally:
        index.close()


def _same_stamp_rewrite(path: Path, text: str) -> None:
    """Rewrite ``path`` in place with same-size text and put its mtime back (one clock tick)."""
    before = path.stat()
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (
        before.st_mtime_ns,
        before.st_size,
        before.st_ino,
    )


@needs_inotify
def test_events_catch_a_rewrite_that_keeps_size_and_mtime(tmp_path):
    path = write(tmp_path, "a.txt", "alpha\n")
    index = ProjectIndex(tmp_path)
    try:
        index.refresh()
        assert index.watching
        _same_stamp_rewrite(path, "omega\n")
        index.refresh()
        assert [text for _, text in index.searchable()] == ["omega\n"]
    finally:
        index.close()


def test_stat_checks_reread_files_modified_around_the_read(tmp_path):
    # Given a file whose mtime is as recent as the moment the index read it ("racy")
    path = write(tmp_path, "a.txt", "alpha\n")
    soon = path.stat().st_mtime_ns + 10**9
    os.utime(path, ns=(soon, soon))
    index = ProjectIndex(tmp_path, use_events=False)
    index.refresh()
    # When it is rewritten without a visible change of size or mtime
    _same_stamp_rewrite(path, "omega\n")
    index.refresh()
    # Then the index did not trust its copy
    assert [text for _, text in index.searchable()] == ["omega\n"]


def test_a_search_over_its_time_budget_is_stopped(tmp_path):
    # Given a worker with a short budget and a file that makes a regex backtrack for ages
    write(tmp_path, "a.txt", "a" * 40 + "b\n")
    backend = WorkerSearch(tmp_path, 1024 * 1024, timeout=1.0)
    try:
        args = {"searchText": "(a+)+$", "regex": True}
        with pytest.raises(ToolError, match="longer than 1 s"):
            backend.run("content", args)
        # Then the next search gets a fresh worker
        found = backend.run("content", {"searchText": "ab"})
        assert [entry["path"] for entry in found] == ["a.txt"]
    finally:
        backend.close()


@pytest.mark.parametrize(("source", "target"), [("a/x", "deeper/still/x"), ("deeper/still/x", "x")])
def test_a_folder_moved_inside_the_tree_stays_watched(tmp_path, source, target):
    # Given an indexed folder that is then moved elsewhere in the tree (up or down)
    write(tmp_path, f"{source}/f.txt", "one\n")
    for folder in ("a", "deeper/still"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    index = ProjectIndex(tmp_path)
    try:
        index.refresh()
        os.rename(tmp_path / source, tmp_path / target)
        index.refresh()
        # When files in it change afterwards
        (tmp_path / target / "f.txt").write_text("two\n")
        write(tmp_path, f"{target}/g.txt", "three\n")
        index.refresh()
        # Then the index still sees them at the new place
        texts = {e.rel: text for e, text in index.searchable()}
        assert texts == {f"{target}/f.txt": "two\n", f"{target}/g.txt": "three\n"}
    finally:
        index.close()


def test_a_repository_made_after_the_first_search_brings_its_exclude_rules(tmp_path):
    write(tmp_path, "a.txt", "x\n")
    write(tmp_path, "b.txt", "x\n")
    index = ProjectIndex(tmp_path)
    try:
        index.refresh()
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        write(tmp_path, ".git/info/exclude", "b.txt\n")
        index.refresh()
        assert [e.rel for e in index.files()] == ["a.txt"]
    finally:
        index.close()


def test_rules_of_folders_above_the_root_apply(tmp_path):
    # Given a repository whose top ignores files of the sub-folder that is the project root
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path, ".gitignore", "proj/generated/\n*.tmp\n")
    root = tmp_path / "proj"
    for rel in ["src/a.py", "generated/b.py", "c.tmp"]:
        write(root, rel, "x\n")
    index = ProjectIndex(root)
    try:
        index.refresh()
        assert [e.rel for e in index.files()] == ["src/a.py"]
    finally:
        index.close()


def test_case_insensitive_search_agrees_with_the_regex_engine(tmp_path):
    # Given files with characters that IGNORECASE matches with ASCII letters in special ways
    texts = {
        "ascii.txt": "Kiss the SKY\n",
        "kelvin.txt": "\u212aiss\n",  # Kelvin sign
        "long_s.txt": "ki\u017f\u017f\n",  # long s
        "dotted.txt": "\u0130d and \u0131d\n",  # İ and ı
        "accents.txt": "Éléphant ÉCOLE\n",
    }
    for name, text in texts.items():
        write(tmp_path, name, text)
    backend = LocalSearch(tmp_path, 1024 * 1024)
    try:
        for query in ["kiss", "KISS", "id", "iss", "sky", "école", "k"]:
            pattern = re.compile(re.escape(query), re.IGNORECASE)
            found = backend.run("content", {"searchText": query, "caseSensitive": False})
            # Then the files and the columns are those of re.IGNORECASE
            expected = {
                name: [m.start() for m in pattern.finditer(text)]
                for name, text in sorted(texts.items())
                if pattern.search(text)
            }
            got = {e["path"]: [m["column"] for m in e["matches"]] for e in found}
            assert got == expected, query
    finally:
        backend.close()
