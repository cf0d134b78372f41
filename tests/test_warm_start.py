"""The warm start: a server starts its helpers in the background, and first calls share them."""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from pathlib import Path
from typing import Any

import pytest

import jupyter_mcp.services
from jupyter_mcp.core.worker import WorkerProcess
from jupyter_mcp.search.engine import WorkerSearch
from jupyter_mcp.services import warm_up


@pytest.fixture(params=[True, False], ids=["warm", "cold"])
def warm_start(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture
def jp_server_config(warm_start: bool) -> dict[str, Any]:
    return {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_mcp": True},
            "allow_unauthenticated_access": False,
        },
        "JupyterMCP": {"warm_start": warm_start},
    }


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The module of every worker process started from now on, in order."""
    started: list[str] = []
    original = WorkerProcess._ensure_started

    def counting(self: WorkerProcess) -> bool:
        new = original(self)
        if new:
            started.append(self.module)
        return new

    monkeypatch.setattr(WorkerProcess, "_ensure_started", counting)
    return started


def _project(root: Path) -> None:
    (root / "m.py").write_text("def helper(value):\n    return value\n\n\nclass Thing:\n    pass\n")
    (root / "notes.txt").write_text("the helper is in m.py\n")


async def _start(jp_serverapp: Any) -> None:
    """What the running server does once its event loop runs (jupyter_server's _post_start)."""
    await jp_serverapp.extension_manager.start_extension("jupyter_mcp")


@pytest.mark.parametrize("warm_start", [True], ids=["warm"], indirect=True)
async def test_the_server_starts_its_helpers_in_the_background(
    jp_serverapp: Any, mcp_app: Any, ok: Any, jp_root_dir: Path, spawned: list[str]
) -> None:
    _project(jp_root_dir)
    services = mcp_app.tool_context.services
    # When the server starts, its start-up does not wait for the helpers
    started = time.monotonic()
    await _start(jp_serverapp)
    assert time.monotonic() - started < 5
    warming = mcp_app._warm_task
    assert warming is not None
    await asyncio.wait_for(warming, 120)
    # Then the search worker runs with the project indexed, and the code worker runs
    assert isinstance(services.search.current, WorkerSearch)
    assert services.search.current.worker.proc.poll() is None
    assert services.code.current is not None
    assert services.code.current.worker.proc.poll() is None
    assert sorted(spawned) == ["jupyter_mcp.code.engine", "jupyter_mcp.search.engine"]
    # And the start-up heap is out of the collector's full collections until the server stops
    assert gc.get_freeze_count() > 10_000
    # And the first calls use them, seeing the project as it is now
    (jp_root_dir / "late.txt").write_text("helper, written after the warm-up\n")
    found = await ok("search_in_files_content", searchText="helper")
    assert sorted(entry["path"] for entry in found) == ["late.txt", "m.py", "notes.txt"]
    symbols = await ok("get_symbols_in_file", pathInProject="m.py")
    assert "helper" in str(symbols) and "Thing" in str(symbols)
    assert len(spawned) == 2
    await mcp_app.stop_extension()
    assert gc.get_freeze_count() == 0


async def test_concurrent_first_calls_share_one_worker(
    jp_serverapp: Any, ok: Any, jp_root_dir: Path, spawned: list[str], warm_start: bool
) -> None:
    _project(jp_root_dir)
    # Given a server that has just started (warming up its helpers, or not)
    await _start(jp_serverapp)
    # When two searches and two code calls arrive at once, before any helper is ready
    answers = await asyncio.gather(
        ok("search_in_files_content", searchText="helper"),
        ok("find_files_by_name_substring", nameSubstring="m.py"),
        ok("get_symbols_in_file", pathInProject="m.py"),
        ok("get_symbols_in_file", pathInProject="m.py"),
    )
    # Then every call answers, and each kind of helper was started once
    assert sorted(e["path"] for e in answers[0]) == ["m.py", "notes.txt"]
    assert [e["path"] for e in answers[1]] == ["m.py"]
    assert answers[2] == answers[3] and "helper" in str(answers[2])
    assert sorted(spawned) == ["jupyter_mcp.code.engine", "jupyter_mcp.search.engine"]


@pytest.mark.parametrize("warm_start", [True], ids=["warm"], indirect=True)
async def test_a_failing_warm_up_leaves_the_first_call_to_start_the_helper(
    jp_serverapp: Any,
    mcp_app: Any,
    ok: Any,
    jp_root_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    _project(jp_root_dir)
    services = mcp_app.tool_context.services

    def broken() -> int:
        raise OSError("no more processes")

    monkeypatch.setattr(services.search, "warm", broken)
    await _start(jp_serverapp)
    await asyncio.wait_for(mcp_app._warm_task, 120)
    assert "warming up the search index failed: no more processes" in caplog.text
    found = await ok("search_in_files_content", searchText="helper")
    assert sorted(entry["path"] for entry in found) == ["m.py", "notes.txt"]


@pytest.mark.parametrize("warm_start", [False], ids=["by-hand"], indirect=True)
async def test_the_search_worker_starts_at_once_and_the_rest_after_the_delay(
    mcp_app: Any, jp_root_dir: Path, spawned: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(jp_root_dir)
    services = mcp_app.tool_context.services
    imported: list[float] = []
    monkeypatch.setattr(
        jupyter_mcp.services, "_warm_notebook_views", lambda: imported.append(time.monotonic())
    )
    # Given a warm-up whose delay is 30 s
    warming = asyncio.create_task(warm_up(services, logging.getLogger("test"), delay=30))
    try:
        # Then the search worker starts long before that, and nothing else has yet
        deadline = time.monotonic() + 20
        while not spawned and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert spawned == ["jupyter_mcp.search.engine"]
        assert imported == [] and not warming.done()
    finally:
        warming.cancel()
    # And with a short delay the code worker and the in-process step follow, once each, and
    # no earlier than the delay after start-up
    started = time.monotonic()
    await asyncio.wait_for(warm_up(services, logging.getLogger("test"), delay=1.0), 120)
    assert sorted(spawned) == ["jupyter_mcp.code.engine", "jupyter_mcp.search.engine"]
    assert len(imported) == 1 and imported[0] - started >= 1.0
