"""Jupyter's saves of a file and its reads take the file's lock (jupyter_contents).

jupyter-collaboration saves a shared document by rewriting its file in place: Jupyter copies
the file to ``.~name``, empties it, writes the new content, then removes the copy. Here such a
save is held while the file is empty, as a busy machine holds it (the write runs in a worker
thread), and something else reaches the same file through the contents manager meanwhile.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nbformat
import pytest
from live_documents import (  # noqa: F401 - fixtures of this module
    _no_kernels_left,
    _saves_finished,
    collaboration_saves_done,
    jp_server_config,
)
from server_configs import collaboration_installed

from jupyter_mcp.core import context as core_context

pytestmark = pytest.mark.skipif(
    not collaboration_installed(), reason="jupyter-collaboration is not installed"
)


@pytest.fixture
def collaboration() -> bool:
    """Every test here runs with jupyter-collaboration enabled."""
    return True


def _notebook(path: Path, source: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source)]
    path.write_text(nbformat.writes(nb))
    return path


class HeldSave:
    """The next save of ``name`` stops once the file is emptied, until ``release``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
        self.name = name
        self.emptied = threading.Event()
        self.released = threading.Event()
        self._write = nbformat.write
        monkeypatch.setattr(nbformat, "write", self._held_write)

    def _held_write(self, nb: Any, fp: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(getattr(fp, "name", "")).name == self.name and not self.emptied.is_set():
            self.emptied.set()
            self.released.wait(60)
        return self._write(nb, fp, *args, **kwargs)

    def release(self) -> None:
        self.released.set()


class RecordingWaiters(ThreadPoolExecutor):
    """The lock waiters' executor, telling when the loop starts waiting for a file's lock."""

    def __init__(self) -> None:
        super().__init__(max_workers=4)
        self.waiting = asyncio.Event()  # set on the loop, which hands the waits out

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.waiting.set()
        return super().submit(fn, *args, **kwargs)


@pytest.fixture
def waiters(monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingWaiters]:
    recording = RecordingWaiters()
    monkeypatch.setattr(core_context, "_lock_waiters", recording)
    yield recording
    recording.shutdown(wait=False)


async def answered_or_waiting(request: asyncio.Future[Any], waiters: RecordingWaiters) -> None:
    """Until ``request`` is answered or waits for a file's lock (the save is held meanwhile:
    without the lock the request goes through now; with it, it can only wait)."""
    waiting = asyncio.ensure_future(waiters.waiting.wait())
    await asyncio.wait({request, waiting}, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()


async def a_save_held_empty(
    ok: Any, root: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, HeldSave]:
    """A notebook ``n.ipynb`` holding ``x = 1`` whose cell the tools changed to ``x = 2``, its
    room's save of that change held with the file emptied."""
    path = _notebook(root / "n.ipynb", "x = 1")
    listed = await ok("get_notebook_cells", pathInProject="n.ipynb")
    held = HeldSave(monkeypatch, "n.ipynb")
    cell = listed["cells"][0]["cellId"]
    await ok("edit_notebook_cell", pathInProject="n.ipynb", cellId=cell, source="x = 2")
    assert await asyncio.to_thread(held.emptied.wait, 60)
    return path, held


async def test_a_read_of_a_notebook_its_room_is_saving_gets_the_saved_notebook(
    ok: Any,
    jp_fetch: Any,
    jp_root_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    waiters: RecordingWaiters,
) -> None:
    # Given a notebook whose shared document the tools changed, its room's save held with
    # the file emptied and its backup beside it
    path, held = await a_save_held_empty(ok, jp_root_dir, monkeypatch)
    assert path.read_bytes() == b"" and (jp_root_dir / ".~n.ipynb").is_file()

    # When the notebook is read through the contents API (as a window opening it does)
    read = asyncio.ensure_future(
        jp_fetch("api", "contents", "n.ipynb", params={"content": "1", "type": "notebook"})
    )
    await answered_or_waiting(read, waiters)
    held.release()
    answer = json.loads((await read).body)

    # Then the read answers the saved notebook, and the file keeps it
    assert answer["content"]["cells"][0]["source"] == "x = 2"
    await collaboration_saves_done()
    assert nbformat.reads(path.read_text(), as_version=4).cells[0].source == "x = 2"
    assert not (jp_root_dir / "n.ipynb.invalid").exists()


async def test_a_save_through_the_contents_api_while_the_room_saves_leaves_a_whole_notebook(
    ok: Any,
    jp_fetch: Any,
    jp_root_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    waiters: RecordingWaiters,
) -> None:
    # Given a notebook whose room's save is held with the file emptied
    path, held = await a_save_held_empty(ok, jp_root_dir, monkeypatch)

    # When a window saves a longer notebook over it through the contents API
    longer = nbformat.v4.new_notebook()
    longer.cells = [nbformat.v4.new_code_cell(f"y = {n}") for n in range(30)]
    body = json.dumps({"type": "notebook", "content": longer})
    save = asyncio.ensure_future(jp_fetch("api", "contents", "n.ipynb", method="PUT", body=body))
    await answered_or_waiting(save, waiters)
    held.release()
    await save
    await collaboration_saves_done()

    # Then the file is a whole notebook: the window's, saved after the room's
    saved = nbformat.reads(path.read_text(), as_version=nbformat.NO_CONVERT)
    nbformat.validate(saved)
    assert [c.source for c in saved.cells] == [f"y = {n}" for n in range(30)]
