"""Progress indicators while background commands, runs, terminal commands and kernels work."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from pathlib import Path
from typing import Any

TASKS = """{"version": "2.0.0", "tasks": [
  {"label": "Long Task", "type": "shell", "command": "sleep 30"}
]}"""


async def _until(predicate: Any, ok: Any, seconds: float = 30) -> list[dict[str, Any]]:
    deadline = time.monotonic() + seconds
    while True:
        indicators = await ok("get_progress_indicators")
        if predicate(indicators) or time.monotonic() > deadline:
            return indicators
        await asyncio.sleep(0.1)


def _check_shape(indicator: dict[str, Any]) -> None:
    assert isinstance(indicator["title"], str) and indicator["title"]
    started = datetime.fromisoformat(indicator["startTime"].replace("Z", "+00:00"))
    since_start_ms = (time.time() - started.timestamp()) * 1000
    assert since_start_ms < 120_000
    # Counted in milliseconds from the start time it gives, up to when it was answered.
    assert isinstance(indicator["elapsedMs"], int) and indicator["elapsedMs"] <= since_start_ms + 1


#: Seconds between two reads of the same indicators.
PAUSE = 0.3


async def _check_elapsed_grows(indicators: list[dict[str, Any]], ok: Any) -> None:
    """Read again after a pause: each indicator kept its start time and counted the pause."""
    await asyncio.sleep(PAUSE)
    again = {i["id"]: i for i in await ok("get_progress_indicators")}
    for first in indicators:
        later = again[first["id"]]
        assert later["startTime"] == first["startTime"]
        assert later["elapsedMs"] - first["elapsedMs"] >= PAUSE * 1000 - 1, (first, later)


async def test_idle_server_has_no_indicators(ok: Any) -> None:
    assert await ok("get_progress_indicators") == []


async def test_background_command_is_listed_while_it_runs(ok: Any) -> None:
    running = asyncio.create_task(ok("run_command_on_background", command="sleep 3; echo finished"))
    indicators = await _until(lambda found: found, ok)
    assert [i["kind"] for i in indicators] == ["backgroundCommand"]
    assert "sleep 3; echo finished" in indicators[0]["title"]
    _check_shape(indicators[0])
    await _check_elapsed_grows(indicators, ok)
    assert (await running)["stdout"] == "finished"
    assert await ok("get_progress_indicators") == []


async def test_run_configuration_and_busy_kernel_are_listed(
    ok: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    (jp_root_dir / ".vscode").mkdir()
    (jp_root_dir / ".vscode" / "tasks.json").write_text(TASKS)
    await ok("run_configuration", configName="Long Task")
    manager = jp_serverapp.kernel_manager
    kernel_id = await manager.start_kernel()
    client = manager.get_kernel(kernel_id).client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        client.execute("import time; time.sleep(4)")
        indicators = await _until(lambda found: len(found) == 2, ok)
        kinds = {i["kind"]: i for i in indicators}
        assert set(kinds) == {"runConfiguration", "kernel"}, indicators
        assert kinds["runConfiguration"]["title"] == "Run configuration: Long Task"
        assert kinds["kernel"]["kernelId"] == kernel_id
        assert "busy" in kinds["kernel"]["title"]
        for indicator in indicators:
            _check_shape(indicator)
        await _check_elapsed_grows(indicators, ok)
        await ok("stop_run_configuration", configName="Long Task")
        indicators = await _until(lambda found: found == [], ok, seconds=30)
        assert indicators == []
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(kernel_id, now=True)


async def test_terminal_command_is_listed(ok: Any) -> None:
    await ok("execute_terminal_command", command="sleep 3")
    indicators = await _until(lambda found: found, ok, seconds=10)
    assert [i["kind"] for i in indicators] == ["terminalCommand"]
    assert indicators[0]["title"] == "Terminal mcp: sleep 3"
    _check_shape(indicators[0])
    await _check_elapsed_grows(indicators, ok)
    assert await _until(lambda found: found == [], ok, seconds=15) == []
