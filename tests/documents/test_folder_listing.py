"""A folder's listing through the stock async file managers (and jupytext's, built on them)
takes one worker hop and gives exactly the manager's own listing and events (folder_listing)."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from jupyter_server.services.contents.filemanager import AsyncFileContentsManager
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

from jupyter_mcp.documents import folder_listing
from jupyter_mcp.documents.folder_listing import list_in_one_hop

pytestmark = pytest.mark.skipif(
    folder_listing.stock_digest() != folder_listing.REPRODUCED_DIGEST,
    reason="jupyter_server's listing code changed: re-check folder_listing against it",
)


def _folder(root: Path) -> None:
    (root / "a.txt").write_text("a")
    (root / "nb.ipynb").write_text("{}")
    (root / "data.bin").write_bytes(b"\0")
    (root / "ünï.md").write_text("u")
    (root / ".hidden").write_text("h")
    (root / ".hiddendir").mkdir()
    (root / "__pycache__").mkdir()
    (root / "x.pyc").write_text("")
    (root / "sub").mkdir()
    (root / "sub" / "in.py").write_text("")
    (root / "link_file").symlink_to(root / "a.txt")
    (root / "link_dir").symlink_to(root / "sub")
    (root / "broken").symlink_to(root / "nowhere")
    (root / "loop").symlink_to(root / "loop")
    (root / "denied.txt").write_text("d")
    (root / "eio.txt").write_text("e")
    os.mkfifo(root / "fifo")


def _jupytext_class() -> Any:
    jupytext = pytest.importorskip("jupytext.async_contentsmanager")
    return jupytext.build_async_jupytext_contents_manager_class(AsyncLargeFileManager)


def _managers(root: Path, cls: Any = AsyncLargeFileManager, **config: Any) -> tuple[Any, Any]:
    return cls(root_dir=str(root), **config), cls(root_dir=str(root), **config)


@pytest.fixture
def odd_stats(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Permission errors and I/O errors, which root (the test runner) never meets otherwise.
    real_lstat = os.lstat

    def lstat(path: Any, *args: Any, **kwargs: Any) -> Any:
        name = os.path.basename(os.fspath(path))
        if name == "denied.txt":
            raise PermissionError(errno.EACCES, "denied", os.fspath(path))
        if name == "eio.txt":
            raise OSError(errno.EIO, "io", os.fspath(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", lstat)


def _recording(manager: Any) -> list[tuple[dict[str, Any], bool]]:
    events: list[tuple[dict[str, Any], bool]] = []
    loop_thread = threading.get_ident()
    manager.emit = lambda data: events.append((data, threading.get_ident() == loop_thread))
    return events


async def _hops(coro: Any) -> tuple[int, Any]:
    """The worker hops (results handed back to the loop from other threads) ``coro`` takes."""
    loop = asyncio.get_running_loop()
    count = 0
    real = loop.call_soon_threadsafe

    def counting(*args: Any, **kwargs: Any) -> Any:
        nonlocal count
        count += 1
        return real(*args, **kwargs)

    loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
    try:
        result = await coro
    finally:
        del loop.call_soon_threadsafe
    return count, result


@pytest.mark.parametrize(
    "config",
    [{}, {"allow_hidden": True}, {"hide_globs": ["*.txt", "sub"]}],
    ids=["default", "allow_hidden", "hide_globs"],
)
@pytest.mark.parametrize("path", ["", "sub", "/link_dir/"])
@pytest.mark.parametrize("kind", ["stock", "jupytext"])
async def test_the_listing_is_jupyters_own(
    tmp_path: Path, odd_stats: None, caplog: Any, config: dict[str, Any], path: str, kind: str
) -> None:
    _folder(tmp_path)
    cls = _jupytext_class() if kind == "jupytext" else AsyncLargeFileManager
    stock, ours = _managers(tmp_path, cls, **config)
    assert list_in_one_hop(ours) is not None and list_in_one_hop(ours) is None
    stock_events, our_events = _recording(stock), _recording(ours)
    caplog.clear()
    stock_hops, expected = await _hops(stock.get(path, content=True, require_hash=True))
    stock_log = [(r.levelname, r.getMessage()) for r in caplog.records]
    caplog.clear()
    our_hops, got = await _hops(ours.get(path, content=True, require_hash=True))
    assert got == expected
    assert our_events == stock_events and all(on_loop for _, on_loop in our_events)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == stock_log
    # One hop for the whole folder, where Jupyter makes one per entry (and one to list it)
    assert our_hops == 1 and stock_hops == len(os.listdir(tmp_path / path.strip("/"))) + 1
    # Without content, nothing changes (no hop either way)
    assert await ours.get(path, content=False) == await stock.get(path, content=False)


@pytest.mark.parametrize("path", ["nowhere", ".hiddendir", "a.txt"])
async def test_errors_are_jupyters_own(tmp_path: Path, path: str) -> None:
    _folder(tmp_path)
    stock, ours = _managers(tmp_path)
    list_in_one_hop(ours)
    errors = []
    for manager in (stock, ours):
        try:
            await manager._dir_model(path, content=True)
        except Exception as e:
            errors.append((type(e), getattr(e, "status_code", None), str(e)))
    assert len(errors) == 2 and errors[0] == errors[1]


async def test_other_managers_list_the_stock_way(tmp_path: Path) -> None:
    _folder(tmp_path)

    class Mine(AsyncFileContentsManager):
        def should_list(self, name: str) -> bool:
            return super().should_list(name)

    mine = Mine(root_dir=str(tmp_path))
    assert list_in_one_hop(mine) is None
    changed = AsyncFileContentsManager(root_dir=str(tmp_path))
    restore = list_in_one_hop(changed)
    assert restore is not None
    changed.should_list = lambda name: True  # type: ignore[method-assign]
    hops, _ = await _hops(changed.get("", content=True))
    assert hops == len(os.listdir(tmp_path)) + 1
    restore()
    assert "_dir_model" not in changed.__dict__


async def test_the_entries_are_the_managers_own_get(tmp_path: Path) -> None:
    # Each entry's model is whatever the manager's get (wrapped by anyone) makes, on the loop.
    _folder(tmp_path)
    manager = AsyncFileContentsManager(root_dir=str(tmp_path))
    list_in_one_hop(manager)
    stock_get = manager.get

    async def someone_elses(path: str, content: bool = True, **kwargs: Any) -> Any:
        model = await stock_get(path, content=content, **kwargs)
        if not content:
            model["seen"] = threading.get_ident()
        return model

    manager.get = someone_elses  # type: ignore[method-assign]
    hops, model = await _hops(manager.get("", content=True))
    assert hops == 1 and model["content"]
    assert all(entry["seen"] == threading.get_ident() for entry in model["content"])


def test_the_server_lists_in_one_hop(jp_serverapp: Any) -> None:
    manager = jp_serverapp.contents_manager
    assert getattr(manager._dir_model, "lists_in_one_hop", False)


def test_a_jupytext_manager_lists_in_one_hop(tmp_path: Path) -> None:
    # jupytext's manager is the one the server runs where jupytext is installed
    assert list_in_one_hop(_jupytext_class()(root_dir=str(tmp_path))) is not None


@pytest.mark.parametrize("budget", [0.0, 3600.0], ids=["every entry", "none"])
async def test_a_big_folder_gives_the_loop_back_while_it_is_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: float
) -> None:
    # Each entry's get makes no hop: without turns given back, the whole folder was one turn
    # of the loop, which every other request waited behind. A budget of 0 s gives it back
    # before each entry but the first; one of an hour never (the entries are the same).
    monkeypatch.setattr(folder_listing, "TURN_SECONDS", budget)
    for n in range(40):
        (tmp_path / f"f{n}.txt").write_text("x")
    manager = AsyncFileContentsManager(root_dir=str(tmp_path))
    list_in_one_hop(manager)
    turns = 0
    listed = asyncio.Event()

    async def elsewhere() -> None:
        nonlocal turns
        while not listed.is_set():
            turns += 1
            await asyncio.sleep(0)

    seen: list[int] = []
    stock_get = manager.get

    async def counting_get(path: str, content: bool = True, **kwargs: Any) -> Any:
        if not content:
            seen.append(turns)  # how many turns the other task had when this entry was made
        return await stock_get(path, content=content, **kwargs)

    manager.get = counting_get  # type: ignore[method-assign]
    other = asyncio.create_task(elsewhere())
    model = await manager.get("", content=True)
    listed.set()
    await other
    assert len(model["content"]) == len(seen) == 40
    # The other task ran between every two entries, or between none
    assert len(set(seen)) == (40 if budget == 0 else 1), seen
