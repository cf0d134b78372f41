"""Terminal tools through a real Jupyter server: the visible terminal and background commands."""

from __future__ import annotations

import asyncio
import os
import platform
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from process_table import processes_with

from jupyter_mcp.core.context import ToolContext, progress_reporter
from jupyter_mcp.execution.output import OutputBuffer, plain_text
from jupyter_mcp.execution.processes import group_alive
from jupyter_mcp.execution.terminal import _drop_echo
from jupyter_mcp.services import build_services
from jupyter_mcp.tools import terminal as terminal_tools
from jupyter_mcp.tools.terminal import pick_command


def _context(root: Path) -> ToolContext:
    """A tool context with its services, as the server builds it, for calling tools directly."""
    ctx = ToolContext(root_dir=root)
    ctx.services = build_services(ctx)
    return ctx


async def _until_gone(marker: str, seconds: float = 5.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    return left


# --- run_command_on_background ------------------------------------------------------------


async def test_background_command_returns_output_and_exit_code(ok: Any) -> None:
    result = await ok("run_command_on_background", command="echo out; echo err >&2; exit 3")
    assert result["stdout"] == "out"
    assert result["stderr"] == "err"
    assert result["exitCode"] == 3
    assert result["timedOut"] is False
    assert result["truncated"] is False


async def test_background_command_runs_in_root_with_env(ok: Any, jp_root_dir: Path) -> None:
    result = await ok(
        "run_command_on_background",
        command='pwd; echo "$MCP_TEST_VALUE"',
        env={"MCP_TEST_VALUE": "v 1"},
    )
    assert result["stdout"].splitlines() == [str(jp_root_dir.resolve()), "v 1"]
    # The server's own environment is kept underneath.
    result = await ok("run_command_on_background", command='echo "$PATH"')
    assert result["stdout"] == os.environ["PATH"]


async def test_background_command_cwd_inside_project(
    ok: Any, fails: Any, jp_root_dir: Path
) -> None:
    (jp_root_dir / "sub" / "dir").mkdir(parents=True)
    result = await ok("run_command_on_background", command="pwd", cwd="sub/dir")
    assert result["stdout"] == str((jp_root_dir / "sub" / "dir").resolve())
    assert "outside the project" in await fails(
        "run_command_on_background", command="pwd", cwd=".."
    )
    assert "outside the project" in await fails(
        "run_command_on_background", command="pwd", cwd="/etc"
    )
    assert "not found" in await fails("run_command_on_background", command="pwd", cwd="nope")
    (jp_root_dir / "file.txt").write_text("x")
    assert "not a directory" in await fails(
        "run_command_on_background", command="pwd", cwd="file.txt"
    )


async def test_background_command_refuses_bad_input(fails: Any) -> None:
    assert "must be a string" in await fails(
        "run_command_on_background", command="true", env={"A": 1}
    )
    assert "empty" in await fails("run_command_on_background", command="   ")
    assert "at most" in await fails("run_command_on_background", command="true", timeout=10**9)
    assert "command" in await fails("run_command_on_background")


async def test_timeout_kills_the_whole_process_group(ok: Any) -> None:
    marker = f"{30 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    started = time.monotonic()
    result = await ok(
        "run_command_on_background",
        command=f"echo started; sh -c 'sleep {marker} & sleep {marker}'",
        timeout=800,
    )
    assert time.monotonic() - started < 10
    assert result["timedOut"] is True
    assert result["exitCode"] is None
    assert "timed out" in result["message"]
    assert result["stdout"] == "started"
    assert await _until_gone(f"sleep {marker}") == []


async def test_leftover_background_children_do_not_outlive_the_call(ok: Any) -> None:
    marker = f"{40 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    result = await ok("run_command_on_background", command=f"sleep {marker} & echo done")
    assert result["stdout"] == "done"
    assert result["exitCode"] == 0
    assert await _until_gone(f"sleep {marker}") == []


async def test_output_is_capped(ok: Any) -> None:
    script = "import sys; sys.stdout.write('x' * 3_000_000); sys.stderr.write('e' * 10)"
    result = await ok("run_command_on_background", command=f'python3 -c "{script}"')
    assert result["truncated"] is True
    assert len(result["stdout"]) == result["outputCapBytes"] == 1024 * 1024
    assert result["stdoutBytes"] == 3_000_000
    assert result["stderr"] == "e" * 10
    assert result["exitCode"] == 0


async def test_cancelling_the_call_kills_the_command(tmp_path: Path) -> None:
    marker = f"{50 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    ctx = _context(tmp_path)
    task = asyncio.create_task(
        terminal_tools.run_command_on_background(ctx, command=f"sleep {marker}; echo never")
    )
    deadline = time.monotonic() + 5
    while not processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert processes_with(f"sleep {marker}")
    assert ctx.services.background_commands.running  # listed while it runs
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _until_gone(f"sleep {marker}") == []
    assert not ctx.services.background_commands.running


async def test_a_command_cancelled_while_it_is_being_started_leaves_nothing_behind(
    tmp_path: Path,
) -> None:
    # On a loaded machine the call can be cancelled after the shell was forked but before
    # asyncio had connected its pipes: asyncio's own clean-up then kills the shell alone, and
    # the command the shell had started lived on (CI timed out waiting in that clean-up).
    marker = f"{50 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    ctx = _context(tmp_path)
    command = f"sleep {marker} & sleep {marker}; echo never"
    for steps in range(20):  # each turn cancels at a later step of the start
        task = asyncio.create_task(terminal_tools.run_command_on_background(ctx, command=command))
        for _ in range(steps):
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 60)
    assert await _until_gone(f"sleep {marker}") == []
    assert not ctx.services.background_commands.running


async def test_a_command_cancelled_again_while_it_is_killed_is_not_left_listed(
    tmp_path: Path,
) -> None:
    # anyio's cancel scopes (the MCP SDK runs each call in one) cancel at every await, so the
    # clean-up after a cancellation is itself cancelled.
    marker = f"{50 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    ctx = _context(tmp_path)
    task = asyncio.create_task(
        terminal_tools.run_command_on_background(ctx, command=f"sleep {marker}")
    )
    deadline = time.monotonic() + 5
    while not processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    while not task.done():  # as a cancel scope does: again at every await, clean-up included
        task.cancel()
        await asyncio.sleep(0.002)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _until_gone(f"sleep {marker}") == []
    deadline = time.monotonic() + 10
    while ctx.services.background_commands.running and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not ctx.services.background_commands.running


# --- wait ----------------------------------------------------------------------------------


async def test_wait_answers_in_spec_shape_without_blocking(ok: Any, jp_fetch: Any) -> None:
    waiting = asyncio.create_task(ok("wait", milliseconds=600))
    await asyncio.sleep(0.1)
    started = time.monotonic()
    response = await jp_fetch("api", "status")  # the server answers while the wait runs
    assert response.code == 200
    assert time.monotonic() - started < 0.5
    assert not waiting.done()
    assert await waiting == {"status": "completed", "message": "Waited for 600 milliseconds"}


async def test_wait_reports_its_progress_every_second(tmp_path: Path) -> None:
    updates: list[tuple[float, float | None, str | None]] = []
    token = progress_reporter.set(lambda *update: updates.append(update))
    try:
        result = await terminal_tools.wait(ToolContext(root_dir=tmp_path), 2500)
    finally:
        progress_reporter.reset(token)

    assert result["status"] == "completed"
    # One report per second waited and one at the end (fewer if a sleep overran, as on a
    # loaded machine), every one out of the whole wait, the last one all of it.
    assert 2 <= len(updates) <= 3
    assert all(total == 2500 for _, total, _ in updates)
    done = [progress for progress, _, _ in updates]
    assert done == sorted(done) and done[0] >= 1000 and done[-1] == 2500
    assert updates[-1][2] == "waited 2.5 s"


async def test_wait_is_bounded(fails: Any) -> None:
    assert "at most 300000" in await fails("wait", milliseconds=300_001)
    assert "minimum" in await fails("wait", milliseconds=-1)


# --- terminal info and OS-specific commands ------------------------------------------------


async def test_terminal_info(ok: Any) -> None:
    info = await ok("get_terminal_info")
    expected = {"Linux": "Linux", "Darwin": "macOS", "Windows": "Windows"}[platform.system()]
    assert info["osType"] == expected
    assert platform.release() in info["osVersion"]
    shell = os.path.basename(os.environ.get("SHELL") or "sh")
    assert info["terminalType"] == shell
    assert info["isIntegratedTerminal"] is True
    assert info["isDefault"] is True


def test_pick_command_per_os() -> None:
    both = {"windowsCommand": "dir", "unixCommand": "ls -la"}
    assert pick_command("Windows", **both) == "dir"
    assert pick_command("Linux", **both) == "ls -la"
    assert pick_command("macOS", **both) == "ls -la"
    assert pick_command("macOS", macCommand="ls -G", **both) == "ls -G"
    assert pick_command("Linux", command="echo hi", windowsCommand="dir") == "echo hi"
    with pytest.raises(Exception, match="No command for Linux: got only windowsCommand"):
        pick_command("Linux", windowsCommand="dir")
    with pytest.raises(Exception, match="No command given"):
        pick_command("Linux")


# --- the visible project terminal ----------------------------------------------------------


async def test_terminal_command_is_visible_and_its_output_readable(
    ok: Any, jp_fetch: Any, jp_serverapp: Any, jp_root_dir: Path
) -> None:
    status = await ok(
        "execute_terminal_command", command="echo hello-$((6*7)) > seen.txt; cat seen.txt"
    )
    assert status == {"status": "executed"}
    # The terminal is a real Jupyter terminal that JupyterLab lists.
    listed = await jp_fetch("api", "terminals")
    assert "mcp" in [t["name"] for t in __import__("json").loads(listed.body)]
    answer = await ok("read_terminal_output", waitMs=10000)
    assert answer["running"] is False
    assert "hello-42" in answer["output"]
    assert "echo hello" not in answer["output"]  # the echo of the typed line is left out
    assert (jp_root_dir / "seen.txt").read_text().strip() == "hello-42"

    # A second command reuses the same terminal and its output starts after the first.
    status = await ok(
        "execute_terminal_command", command="echo second-$((1+1))", waitForOutput=True
    )
    assert status["status"] == "executed"
    assert "second-2" in status["output"]
    assert "hello-42" not in status["output"]
    manager = jp_serverapp.web_app.settings["terminal_manager"]
    assert list(manager.terminals) == ["mcp"]


async def test_terminal_reports_running_command(ok: Any, fails: Any, mcp_app: Any) -> None:
    await ok("execute_terminal_command", command="sleep 1.5; echo finished-now")
    answer = await ok("read_terminal_output")
    assert answer["running"] is True
    # Nothing is typed into a terminal whose foreground job is still running.
    deadline = time.monotonic() + 5
    while not mcp_app.tool_context.services.terminal.busy():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    assert "still running" in await fails(
        "execute_terminal_command", command="echo typed-too-early"
    )
    answer = await ok("read_terminal_output", waitMs=10000)
    assert answer["running"] is False
    assert "finished-now" in answer["output"]
    assert "typed-too-early" not in answer["output"]
    # Following by offset: nothing new after the last offset.
    later = await ok("read_terminal_output", offset=answer["nextOffset"])
    assert later["output"] == ""


@pytest.fixture
def ctrl_c_ignored() -> Any:
    """The server process with SIGINT and SIGQUIT ignored, as a shell without job control
    starts a background job (a script's ``jupyter lab &``)."""
    before = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGQUIT)}
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)


async def test_a_cancel_stops_the_terminal_command_of_a_server_that_ignores_ctrl_c(
    ctrl_c_ignored: Any, mcp_app: Any
) -> None:
    marker = f"{700 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    ctx = mcp_app.tool_context
    call = asyncio.create_task(
        terminal_tools.execute_terminal_command(
            ctx, command=f"sleep {marker}", waitForOutput=True, timeout=300000
        )
    )
    deadline = time.monotonic() + 30
    while not processes_with(f"sleep {marker}") and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert processes_with(f"sleep {marker}")
    call.cancel()  # the terminal types Ctrl-C for it
    with pytest.raises(asyncio.CancelledError):
        await call
    assert await _until_gone(f"sleep {marker}", seconds=15) == []
    # The server itself still ignores Ctrl-C, as it was started.
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    assert signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN


async def test_os_specific_command_runs_in_the_terminal(ok: Any, jp_root_dir: Path) -> None:
    result = await ok(
        "execute_os_specific_command",
        windowsCommand="echo win > os.txt",
        unixCommand="echo unix > os.txt",
        macCommand="echo mac > os.txt",
    )
    expected = {"Linux": "unix", "Darwin": "mac"}[platform.system()]
    assert result == {
        "osType": {"Linux": "Linux", "Darwin": "macOS"}[platform.system()],
        "command": f"echo {expected} > os.txt",
        "executed": True,
    }
    answer = await ok("read_terminal_output", waitMs=10000)
    assert answer["running"] is False
    assert (jp_root_dir / "os.txt").read_text().strip() == expected


class TestTerminalsDisabled:
    """A server started with terminals disabled."""

    @pytest.fixture
    def jp_server_config(self, jp_server_config: dict[str, Any]) -> dict[str, Any]:
        server = {**jp_server_config["ServerApp"], "terminals_enabled": False}
        return {**jp_server_config, "ServerApp": server}

    async def test_clear_error(self, fails: Any, ok: Any) -> None:
        assert "Terminals are not available" in await fails(
            "execute_terminal_command", command="ls"
        )
        assert "Terminals are not available" in await fails("read_terminal_output")
        assert (await ok("get_terminal_info"))["isIntegratedTerminal"] is False


def test_subprocess_helper_sees_processes() -> None:
    marker = f"{60 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    proc = subprocess.Popen(["sleep", marker])
    try:
        # Popen returns once the child is forked; it shows the new command line only after its
        # exec, which a loaded machine can delay.
        deadline = time.monotonic() + 10
        while not processes_with(f"sleep {marker}") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert processes_with(f"sleep {marker}")
    finally:
        proc.kill()
        proc.wait()
    assert not processes_with(f"sleep {marker}")


def _no_process_table_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make listing /proc fail, so a test sees whether ``group_alive`` scanned it."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("group_alive listed the whole process table")

    monkeypatch.setattr(os, "scandir", refuse)
    monkeypatch.setattr(os, "listdir", refuse)
    monkeypatch.setattr(Path, "iterdir", refuse)


def _wait_for_state(pid: int, state: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat[stat.rfind(")") + 2] == state:
            return
        time.sleep(0.02)
    raise AssertionError(f"process {pid} never reached state {state}")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_group_alive_answers_without_scanning_every_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    finished = subprocess.Popen(["true"], start_new_session=True)
    finished.wait()
    running = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        with monkeypatch.context() as m:
            _no_process_table_scan(m)
            assert group_alive(finished.pid) is False  # empty group: one killpg
            assert group_alive(running.pid) is True  # live leader: its own stat file
    finally:
        running.kill()
        running.wait()
    assert group_alive(running.pid) is False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_group_alive_ignores_zombies_and_finds_orphaned_members() -> None:
    # A leader that exited but is not reaped yet is a zombie: the group is not alive.
    zombie = subprocess.Popen(["true"], start_new_session=True)
    try:
        _wait_for_state(zombie.pid, "Z")
        assert group_alive(zombie.pid) is False
    finally:
        zombie.wait()
    # A leader that is gone while a child it started lives on: the group is alive.
    marker = f"{70 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"
    leader = subprocess.Popen(
        ["sh", "-c", f"sleep {marker} >/dev/null 2>&1 & exit 0"], start_new_session=True
    )
    leader.wait()
    try:
        assert group_alive(leader.pid) is True
    finally:
        os.killpg(leader.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while group_alive(leader.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert group_alive(leader.pid) is False  # killed: gone, or a zombie nobody reaps


# --- output capture helpers ----------------------------------------------------------------


def test_output_buffer_keeps_the_tail_with_offsets() -> None:
    buffer = OutputBuffer(cap=10)
    buffer.append("0123456789")
    buffer.append("abcde")
    chunk = buffer.read(0)
    assert (chunk.text, chunk.next_offset, chunk.truncated) == ("56789abcde", 15, True)
    chunk = buffer.read(12)
    assert (chunk.text, chunk.next_offset, chunk.truncated) == ("cde", 15, False)
    assert buffer.read(99).text == ""


def test_plain_text_and_echo_removal() -> None:
    raw = "\x1b[?2004h\x1b]0;title\x07user@host:~$ echo hi\r\n\x1b[32mhi\x1b[0m\r\n50%\r100%\r\n"
    assert plain_text(raw) == "user@host:~$ echo hi\nhi\n100%\n"
    # The echo is found even when the line editor wrapped it at the terminal's width.
    wrapped = "prompt$ echo aaaa bb\r\nbb cc\r\nresult\r\nprompt$ "
    assert _drop_echo(wrapped, "echo aaaa bbbb cc") == "result\r\nprompt$ "
