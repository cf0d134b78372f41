"""A notebook changed in its file: one transaction per change, ids, streamed outputs, caps."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_mcp.core.context import ToolContext
from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.documents.files import transaction
from jupyter_mcp.documents.notebook_file import FileNotebook
from jupyter_mcp.documents.running_cell import RunningCell, redraw_lines
from jupyter_mcp.lab.notebooks import open_notebook
from jupyter_mcp.services import build_services


def _context(root: Path) -> ToolContext:
    ctx = ToolContext(root)
    ctx.services = build_services(ctx)
    return ctx


def _write(path: Path, *sources: str, minor: int = 5) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.nbformat_minor = minor
    if minor < 5:
        for cell in nb.cells:
            del cell["id"]
    path.write_text(nbformat.writes(nb))


async def test_opening_refuses_missing_non_notebook_and_malformed_files(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    (tmp_path / "a.txt").write_text("hello")
    (tmp_path / "bad.ipynb").write_text("{not json")
    (tmp_path / "odd.ipynb").write_text(json.dumps({"nbformat": 4, "cells": [{"x": 1}]}))
    with pytest.raises(ToolError, match="Notebook not found: nope.ipynb"):
        await open_notebook(ctx, "nope.ipynb")
    with pytest.raises(ToolError, match=r"a.txt is not a notebook \(.ipynb\)"):
        await open_notebook(ctx, "a.txt")
    with pytest.raises(ToolError, match="bad.ipynb is not a valid notebook"):
        await open_notebook(ctx, "bad.ipynb")
    with pytest.raises(ToolError, match="odd.ipynb is not a valid notebook"):
        await open_notebook(ctx, "odd.ipynb")
    with pytest.raises(ToolError, match="outside"):
        await open_notebook(ctx, "../elsewhere.ipynb")


async def test_no_path_and_no_window_asks_for_path_in_project(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="give the notebook's pathInProject"):
        await open_notebook(_context(tmp_path), None)


async def test_a_change_is_one_write_and_a_refused_one_leaves_the_bytes(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    path = tmp_path / "n.ipynb"
    _write(path, "a = 1", "b = 2")
    doc = await open_notebook(ctx, "n.ipynb")
    assert doc.location == "file" and doc.shown == "n.ipynb"
    before = path.read_bytes()

    def refuse(nb: dict[str, Any]) -> None:
        nb["cells"][0]["source"] = "changed"
        raise ToolError("no")

    with pytest.raises(ToolError):
        await doc.change(refuse)
    assert path.read_bytes() == before

    def invalid(nb: dict[str, Any]) -> None:
        nb["cells"][0]["cell_type"] = "nonsense"

    with pytest.raises(ToolError, match="invalid notebook"):
        await doc.change(invalid)
    assert path.read_bytes() == before

    def edit(nb: dict[str, Any]) -> str:
        nb["cells"][1]["source"] = "b = 3"
        return nb["cells"][1]["id"]

    cell_id = await doc.change(edit)
    stored = nbformat.read(path, as_version=4)
    assert [c.source for c in stored.cells] == ["a = 1", "b = 3"]
    assert stored.cells[1].id == cell_id
    nbformat.validate(stored)


async def test_a_notebook_without_ids_gets_the_ids_it_was_read_with(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    path = tmp_path / "old.ipynb"
    _write(path, "x = 1", "x = 1", minor=4)
    doc = await open_notebook(ctx, "old.ipynb")
    first = [c["id"] for c in (await doc.snapshot())["cells"]]
    again = [c["id"] for c in (await doc.snapshot())["cells"]]
    assert first == again and len(set(first)) == 2
    assert "id" not in path.read_text()  # reading does not write

    def touch(nb: dict[str, Any]) -> None:
        nb["cells"][1]["source"] = "y = 2"

    await doc.change(touch)
    stored = nbformat.read(path, as_version=4)
    assert (stored.nbformat, stored.nbformat_minor) == (4, 5)
    assert [c.id for c in stored.cells] == first
    nbformat.validate(stored)


async def test_a_file_tool_write_and_a_cell_edit_never_interleave(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    path = tmp_path / "n.ipynb"
    _write(path, "a = 1")
    doc = await open_notebook(ctx, "n.ipynb")
    inside = threading.Event()
    release = threading.Event()

    def slow_edit(nb: dict[str, Any]) -> None:
        inside.set()
        release.wait(10)
        nb["cells"][0]["source"] = "from the cell edit"

    task = asyncio.ensure_future(doc.change(slow_edit))
    assert await asyncio.to_thread(inside.wait, 10)
    writer_done = threading.Event()

    def file_tool_write() -> None:
        with transaction(ctx, [path]) as tx:
            text = tx.read(path, "n.ipynb")
            tx.write(path, "n.ipynb", text + "\n# %%\nadded = True\n")
        writer_done.set()

    writer = threading.Thread(target=file_tool_write)
    writer.start()
    time.sleep(0.3)
    assert not writer_done.is_set()  # it waits for the notebook's lock
    release.set()
    await task
    await asyncio.to_thread(writer.join, 10)
    sources = [c.source for c in nbformat.read(path, as_version=4).cells]
    assert sources == ["from the cell edit", "added = True"]


async def test_streamed_outputs_are_batched_merged_and_finished(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    path = tmp_path / "n.ipynb"
    _write(path, "for i in range(3): print(i)")
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="old\n")]
    nb.cells[0].execution_count = 7
    path.write_text(nbformat.writes(nb))
    cell_id = nb.cells[0].id
    writes: list[float] = []
    ctx.services.on_file_written = lambda p: writes.append(time.monotonic())
    doc = FileNotebook(ctx, path, "n.ipynb", flush_interval=0.4)
    await doc.run_started(cell_id)
    started = nbformat.read(path, as_version=4).cells[0]
    assert started.outputs == [] and started.execution_count is None
    for i in range(20):
        await doc.output(cell_id, {"output_type": "stream", "name": "stdout", "text": f"{i}\n"})
        await asyncio.sleep(0.05)
    await doc.output(cell_id, {"output_type": "stream", "name": "stderr", "text": "warn\n"})
    await doc.run_finished(cell_id, 8)
    # One write to start, about one per interval while running, one at the end: not one per output
    assert 3 <= len(writes) <= 6, writes
    cell = nbformat.read(path, as_version=4).cells[0]
    assert cell.execution_count == 8
    assert [(o.name, o.text) for o in cell.outputs] == [
        ("stdout", "".join(f"{i}\n" for i in range(20))),
        ("stderr", "warn\n"),
    ]


async def test_an_unknown_cell_fails_when_it_starts(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    path = tmp_path / "n.ipynb"
    _write(path, "1")
    before = path.read_bytes()
    doc = FileNotebook(ctx, path, "n.ipynb")
    with pytest.raises(ToolError, match="no cell with id 'nope'"):
        await doc.run_started("nope")
    assert path.read_bytes() == before


async def test_a_huge_output_is_capped_and_the_notebook_stays_valid(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    path = tmp_path / "n.ipynb"
    _write(path, "while True: print('x' * 1000)")
    cell_id = nbformat.read(path, as_version=4).cells[0].id
    doc = FileNotebook(ctx, path, "n.ipynb", output_limit=50_000)
    await doc.run_started(cell_id)
    for _ in range(200):
        await doc.output(cell_id, {"output_type": "stream", "name": "stdout", "text": "x" * 1000})
    await doc.output(cell_id, {"output_type": "display_data", "data": {"text/plain": "y" * 10}})
    await doc.run_finished(cell_id, None)
    stored = nbformat.read(path, as_version=4)
    nbformat.validate(stored)
    outputs = stored.cells[0].outputs
    assert len(outputs[0].text) == 50_000
    assert "limit of 50000 characters" in outputs[-1].text
    assert "150010 more characters were not kept" in outputs[-1].text
    assert path.stat().st_size < 60_000


def test_carriage_returns_redraw_their_line() -> None:
    assert redraw_lines("10%\r50%\r100%\ndone\n") == "100%\ndone\n"
    assert redraw_lines("10%\r") == "10%\r"
    assert redraw_lines("a\r\nb") == "a\nb"
    run = RunningCell("c")
    for part in ["10%\r", "50%\r", "100%\n"]:
        run.add({"output_type": "stream", "name": "stdout", "text": part})
    assert run.outputs == [{"output_type": "stream", "name": "stdout", "text": "100%\n"}]


async def test_binary_junk_and_lone_surrogates_in_outputs_keep_the_notebook_loadable(
    tmp_path: Path,
) -> None:
    ctx = _context(tmp_path)
    path = tmp_path / "n.ipynb"
    _write(path, "print(junk)")
    cell_id = nbformat.read(path, as_version=4).cells[0].id
    doc = FileNotebook(ctx, path, "n.ipynb")
    await doc.run_started(cell_id)
    junk = "a\x00b\x07\x1b[31mred\udcff\ud800z"
    await doc.output(cell_id, {"output_type": "stream", "name": "stdout", "text": junk})
    await doc.output(
        cell_id, {"output_type": "display_data", "data": {"text/plain": "\ud83d"}, "metadata": {}}
    )
    await doc.run_finished(cell_id, 1)
    stored = nbformat.read(path, as_version=4)
    nbformat.validate(stored)
    outputs = stored.cells[0].outputs
    assert outputs[0].text == "a\x00b\x07\x1b[31mred\ufffd\ufffdz"
    assert outputs[1].data["text/plain"] == "\ufffd"


async def test_an_unchanged_file_is_parsed_once_and_a_changed_one_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_mcp.documents import notebook_format

    ctx = _context(tmp_path)
    path = tmp_path / "n.ipynb"
    _write(path, "a = 1", "b = 2")
    parses = []
    parse = notebook_format.parse_notebook
    monkeypatch.setattr(
        notebook_format,
        "parse_notebook",
        lambda raw, shown: parses.append(shown) or parse(raw, shown),
    )
    doc = await open_notebook(ctx, "n.ipynb")
    first = await doc.snapshot()
    version = doc.version()
    assert [c["source"] for c in first["cells"]] == ["a = 1", "b = 2"] and len(parses) == 1
    # Each snapshot is the caller's own: changing one changes neither the cache nor the next.
    first["cells"][0]["source"] = "changed by the caller"
    again = await (await open_notebook(ctx, "n.ipynb")).snapshot()
    assert again["cells"][0]["source"] == "a = 1" and len(parses) == 1
    assert doc.version() == version
    # Same size, written in place (same inode) and atomically (new inode): both are seen.
    before = path.stat()
    _write(path, "a = 3", "b = 2")
    assert path.stat().st_size == before.st_size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1))
    assert doc.version() != version
    assert (await doc.snapshot())["cells"][0]["source"] == "a = 3" and len(parses) == 2
    version = doc.version()
    replacement = tmp_path / "new.ipynb"
    _write(replacement, "a = 4", "b = 2")
    os.utime(replacement, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns))
    os.replace(replacement, path)
    assert doc.version() != version
    assert (await doc.snapshot())["cells"][0]["source"] == "a = 4" and len(parses) == 3
    # A file broken after a good read is refused, never answered from the cache.
    path.write_text("{not json")
    with pytest.raises(ToolError, match="n.ipynb is not a valid notebook"):
        await open_notebook(ctx, "n.ipynb")
