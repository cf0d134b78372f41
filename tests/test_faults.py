"""Faults: helpers and kernels that die, clients that leave, writes that fail half-way.

Each test breaks something for real (a signal to a real process, a real disconnect, a failing
rename or a file-size limit) and then checks that nothing was lost and the server still answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import pty
import signal
import subprocess
import sys
import termios
import textwrap
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx2
import nbformat
import pytest
from process_table import processes_with

from jupyter_mcp.core.context import ToolContext
from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.documents import files
from jupyter_mcp.services import build_services
from jupyter_mcp.tools.files import rewrite_file_content


def _marker() -> str:
    """A number no other process has as its ``sleep`` argument."""
    return f"{5000 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6}"


async def _until(condition: Any, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)
    return True


# --- helper processes killed mid-call ----------------------------------------------------


async def _kill_during_call(worker: Any, call: asyncio.Future[str]) -> str:
    """Kill ``worker``'s child while ``call`` waits for its answer; the call's error message.

    The child is stopped first, so that it holds the request without answering it; it is
    killed once the call is inside the worker (holding its lock) and has had time to send.
    """
    proc = worker.proc
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        assert await _until(worker._lock.locked, 30)
        await asyncio.sleep(0.5)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
    return await asyncio.wait_for(call, 60)


async def test_a_search_worker_killed_mid_call_fails_that_call_and_the_next_works(
    ok: Any, fails: Any, mcp_app: Any, jp_root_dir: Path
) -> None:
    (jp_root_dir / "a.txt").write_text("needle\n")
    assert [e["path"] for e in await ok("search_in_files_content", searchText="needle")] == [
        "a.txt"
    ]
    worker = mcp_app.tool_context.services.search.current.worker
    first = worker.proc.pid
    # When the worker is killed while it holds a search
    call = asyncio.ensure_future(fails("search_in_files_content", searchText="needle"))
    message = await _kill_during_call(worker, call)
    # Then that search fails saying what happened, and the next one gets a new worker
    assert "search worker process stopped during this search" in message
    assert "killed by signal 9" in message
    (jp_root_dir / "b.txt").write_text("needle\n")
    found = await ok("search_in_files_content", searchText="needle")
    assert [e["path"] for e in found] == ["a.txt", "b.txt"]
    assert worker.proc.pid != first


async def test_a_code_worker_killed_mid_call_fails_that_call_and_the_next_works(
    ok: Any, fails: Any, mcp_app: Any, jp_root_dir: Path
) -> None:
    (jp_root_dir / "m.py").write_text("def helper():\n    return 1\n")
    assert "helper" in json.dumps(await ok("get_symbols_in_file", pathInProject="m.py"))
    worker = mcp_app.tool_context.services.code.current.worker
    first = worker.proc.pid
    call = asyncio.ensure_future(fails("get_symbols_in_file", pathInProject="m.py"))
    message = await _kill_during_call(worker, call)
    assert "code-analysis process stopped unexpectedly" in message
    assert "killed by signal 9" in message
    (jp_root_dir / "m.py").write_text("def helper():\n    return 1\n\n\ndef other():\n    pass\n")
    symbols = json.dumps(await ok("get_symbols_in_file", pathInProject="m.py"))
    assert "helper" in symbols and "other" in symbols
    assert worker.proc.pid != first


# --- a kernel killed under a run -----------------------------------------------------------


def _tasks(root: Path, **commands: str) -> None:
    (root / ".vscode").mkdir(exist_ok=True)
    tasks = [{"label": label, "type": "shell", "command": c} for label, c in commands.items()]
    (root / ".vscode" / "tasks.json").write_text(json.dumps({"version": "2.0.0", "tasks": tasks}))


async def test_a_kernel_killed_under_a_run_ends_the_run_and_its_program(
    ok: Any, jp_serverapp: Any, jp_root_dir: Path
) -> None:
    marker = _marker()
    _tasks(jp_root_dir, Sleep=f"echo started; sleep {marker}")
    await ok("run_configuration", configName="Sleep")
    assert await _until(lambda: any(c.startswith("sleep ") for c in processes_with(marker)))
    report = await ok("get_run_output", configName="Sleep")
    kernel = jp_serverapp.kernel_manager.get_kernel(report["kernelId"])
    # When the run's kernel is killed
    os.kill(kernel.provisioner.process.pid, signal.SIGKILL)

    async def ended() -> dict[str, Any]:
        deadline = time.monotonic() + 60
        while True:
            report = await ok("get_run_output", configName="Sleep")
            if report["status"] not in ("starting", "running") or time.monotonic() > deadline:
                return report
            await asyncio.sleep(0.2)

    # Then the run ends with an error that says so, its program is gone too
    report = await ended()
    assert report["status"] == "error", report
    assert "kernel died" in report["error"]
    assert "started" in report["output"]
    assert await _until(lambda: not processes_with(marker))
    # And the configuration runs again
    await ok("run_configuration", configName="Sleep")
    assert await _until(lambda: any(c.startswith("sleep ") for c in processes_with(marker)))
    stopped = await ok("stop_run_configuration", configName="Sleep")
    assert stopped == "Run configuration stopped"
    assert await _until(lambda: not processes_with(marker))


# --- writes that fail half-way -----------------------------------------------------------


def _project(tmp_path: Path) -> ToolContext:
    ctx = ToolContext(root_dir=tmp_path)
    ctx.services = build_services(ctx, breakpoints_file=tmp_path / "bp.json")
    return ctx


def test_a_failing_rename_leaves_the_old_file_whole_and_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = _project(tmp_path)
    old = "original line\n" * 1000
    (tmp_path / "a.txt").write_text(old)

    def failing_replace(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", failing_replace)
    with pytest.raises(ToolError, match="No space left on device"):
        rewrite_file_content(ctx, pathInProject="a.txt", text="new text\n" * 5000)
    assert (tmp_path / "a.txt").read_text() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


def test_a_write_cut_by_the_file_size_limit_leaves_the_old_file_whole(tmp_path: Path) -> None:
    # The write runs in a child process whose files may not grow beyond 64 KiB, as on a full
    # disk: writing the new text fails half-way.
    root = tmp_path / "project"
    root.mkdir()
    old = "original line\n" * 1000
    (root / "a.txt").write_text(old)
    script = textwrap.dedent(
        f"""
        import resource, signal, sys
        from jupyter_mcp.core.context import ToolContext
        from jupyter_mcp.core.errors import ToolError
        from jupyter_mcp.services import build_services
        from jupyter_mcp.tools.files import rewrite_file_content

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failing write, not a dead process
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
        ctx = ToolContext(root_dir={str(root)!r})
        ctx.services = build_services(ctx, breakpoints_file={str(tmp_path / "bp.json")!r})
        try:
            rewrite_file_content(ctx, pathInProject="a.txt", text="new text\\n" * 100_000)
        except ToolError as e:
            print("refused:", e)
            sys.exit(0)
        sys.exit("the write succeeded")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(files.__file__).parents[2])},
    )
    assert done.returncode == 0, done.stderr
    assert "refused:" in done.stdout and "File too large" in done.stdout
    assert (root / "a.txt").read_text() == old
    assert sorted(p.name for p in root.iterdir()) == ["a.txt"]


# --- clients that leave in the middle of a call ------------------------------------------


async def _no_background_commands(ok: Any, seconds: float = 30) -> bool:
    """True once the server lists no background command as running (it answers, too)."""
    deadline = time.monotonic() + seconds
    while True:
        indicators = await ok("get_progress_indicators")
        if not [i for i in indicators if i["kind"] == "backgroundCommand"]:
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.1)


LEGACY = "2025-06-18"
MODERN = "2026-07-28"


async def _open_legacy(http: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> None:
    """Open a legacy session on ``http``: its id and protocol version go into ``headers``."""
    opening = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "leaving", "version": "0"},
        },
    }
    opened = await http.post(url, content=json.dumps(opening), headers=headers)
    headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
    headers["MCP-Protocol-Version"] = LEGACY
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    await http.post(url, content=json.dumps(initialized), headers=headers)


def _call(number: int, arguments: dict[str, Any], *, modern: bool, progress: bool) -> str:
    params: dict[str, Any] = {"name": "run_command_on_background", "arguments": arguments}
    meta: dict[str, Any] = {}
    if modern:
        meta = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "leaving", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    if progress:
        meta["progressToken"] = "p"
    if meta:
        params["_meta"] = meta
    return json.dumps({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params})


@pytest.mark.parametrize(
    "era, progress",
    [("legacy", False), ("legacy", True), ("modern", False)],
    ids=["legacy-json", "legacy-stream", "modern"],
)
async def test_a_client_that_leaves_mid_call_stops_the_work(
    mcp_url: str, token: str, jp_root_dir: Path, ok: Any, era: str, progress: bool
) -> None:
    marker = _marker()
    headers = {
        "Authorization": f"token {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    body = _call(
        7,
        {"command": f"sleep {marker}", "timeout": 120000},
        modern=era == "modern",
        progress=progress,
    )
    async with httpx2.AsyncClient(timeout=30) as http:
        if era == "legacy":
            await _open_legacy(http, mcp_url, headers)
        else:
            headers.update(
                {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call"},
                **{"Mcp-Name": "run_command_on_background"},
            )
        # When the client goes away while the command runs
        leaving = asyncio.ensure_future(http.post(mcp_url, content=body, headers=headers))
        assert await _until(lambda: bool(processes_with(marker)))
        leaving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await leaving
    # Then the command is stopped, and the server still answers
    assert await _until(lambda: not processes_with(marker)), processes_with(marker)
    assert await _no_background_commands(ok)


async def test_a_seed_rest_client_that_leaves_mid_call_stops_the_work(
    jp_serverapp: Any, http_server_port: tuple[Any, int], jp_base_url: str, token: str, ok: Any
) -> None:
    marker = _marker()
    url = f"http://127.0.0.1:{http_server_port[1]}{jp_base_url}mcp/run_command_on_background"
    async with httpx2.AsyncClient(timeout=30, headers={"Authorization": f"token {token}"}) as http:
        leaving = asyncio.ensure_future(
            http.post(url, json={"command": f"sleep {marker}", "timeout": 120000})
        )
        assert await _until(lambda: bool(processes_with(marker)))
        leaving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await leaving
    assert await _until(lambda: not processes_with(marker)), processes_with(marker)
    assert await _no_background_commands(ok)


# --- the server stopped while work runs ----------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid``, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            if fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


class _Terminal:
    """A pseudo-terminal a server runs in, as in a user's terminal window: Ctrl-C typed into
    it is a SIGINT to the server's whole process group, and Jupyter asks before it stops."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        self.output = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)

    def _read(self) -> None:
        # The server writes its log to the terminal: read it, or the server blocks on a full one.
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.output += chunk

    def popen_options(self) -> dict[str, Any]:
        def controlling_terminal() -> None:
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        return {
            "stdin": self.slave,
            "stdout": self.slave,
            "stderr": self.slave,
            "start_new_session": True,
            "preexec_fn": controlling_terminal,
        }

    def started(self) -> None:
        os.close(self.slave)
        self._reader.start()

    def ctrl_c(self) -> None:
        os.write(self.master, b"\x03")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.master)


def _signal_server(server: subprocess.Popen[bytes], how: str, terminal: _Terminal | None) -> None:
    """Stop the server the way ``how`` says, as users and process managers do."""
    if how == "SIGTERM":
        server.send_signal(signal.SIGTERM)
    elif how == "SIGINT twice":  # no terminal: no question asked; the second lands mid-exit
        server.send_signal(signal.SIGINT)
        time.sleep(0.5)
        server.send_signal(signal.SIGINT)
    elif how == "SIGINT burst":  # an impatient user's many Ctrl-Cs, through the whole exit
        deadline = time.monotonic() + 8
        while server.poll() is None and time.monotonic() < deadline:
            server.send_signal(signal.SIGINT)
            time.sleep(0.1)
    else:  # Ctrl-C in a terminal: Jupyter asks; a second one stops it; more come meanwhile
        assert terminal is not None
        terminal.ctrl_c()
        deadline = time.monotonic() + 60
        while b"Shut down this Jupyter server" not in terminal.output:
            assert time.monotonic() < deadline, "Jupyter did not ask: " + terminal.output.decode()
            time.sleep(0.1)
        for _ in range(3):
            terminal.ctrl_c()
            time.sleep(0.3)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT twice", "SIGINT burst", "Ctrl-C in a terminal"])
def test_stopping_the_server_leaves_no_process_behind(tmp_path: Path, how: str) -> None:
    root = tmp_path / "project"
    root.mkdir()
    run_marker, command_marker, terminal_marker = _marker(), _marker(), _marker()
    _tasks(root, Serve=f"sleep {run_marker} & sleep {run_marker}")
    (root / "n.ipynb").write_text(json.dumps(nbformat_v4_notebook()))
    port, token = _free_port(), uuid.uuid4().hex
    home = tmp_path / "home"
    env = {
        **os.environ,
        "JUPYTER_TOKEN": token,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "PYTHONPATH": str(Path(files.__file__).parents[2]),
    }
    terminal = _Terminal() if how == "Ctrl-C in a terminal" else None
    quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_server",
            "--no-browser",
            "--allow-root",
            f"--port={port}",
            "--ServerApp.port_retries=0",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.jpserver_extensions={'jupyter_mcp': True}",
        ],
        env=env,
        **(terminal.popen_options() if terminal is not None else quiet),
    )
    if terminal is not None:
        terminal.started()
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"token {token}"}
    below: set[int] = set()
    try:
        with httpx2.Client(headers=headers, timeout=120) as http:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if http.get(f"{base}/api/status").status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                assert server.poll() is None and time.monotonic() < deadline, "no server"
                time.sleep(0.2)

            def call(tool: str, **arguments: Any) -> Any:
                answer = http.post(f"{base}/mcp/{tool}", json=arguments).json()
                assert answer["error"] is None, answer
                return answer["status"]

            # Every kind of thing the server starts: a run (its kernel and programs), a
            # notebook's kernel, a command in the terminal, a background command whose call is
            # still waiting when the server stops; the search and code workers run already.
            call("run_configuration", configName="Serve")
            call("execute_code_in_kernel", pathInProject="n.ipynb", code="x = 1")
            call("execute_terminal_command", command=f"sleep {terminal_marker}")
            threading.Thread(
                target=lambda: _quietly(
                    http.post,
                    f"{base}/mcp/run_command_on_background",
                    json={"command": f"sleep {command_marker}", "timeout": 120000},
                ),
                daemon=True,
            ).start()
            deadline = time.monotonic() + 60
            markers = (run_marker, command_marker, terminal_marker)
            while not all(processes_with(m) for m in markers):
                assert time.monotonic() < deadline, "the run and the commands did not start"
                time.sleep(0.1)
        below = _descendants(server.pid)
        assert len(below) >= 6  # two kernels, the programs, the commands, the workers
        # When the server is told to stop
        _signal_server(server, how, terminal)
        server.wait(timeout=90)
        # Then nothing it started is left on the machine
        deadline = time.monotonic() + 15
        while any(_alive(pid) for pid in below) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [_command_line(pid) for pid in below if _alive(pid)] == []
        assert [m for m in markers if processes_with(m)] == []
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        for pid in below:  # a failed run leaves nothing behind either
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if terminal is not None:
            terminal.close()


def nbformat_v4_notebook() -> dict[str, Any]:
    """An empty notebook with a Python 3 kernel, as a file holds it."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    return dict(nb)


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return str(pid)


def _quietly(call: Any, *args: Any, **kwargs: Any) -> None:
    try:
        call(*args, **kwargs)
    except Exception:  # the server goes away under this call: that is the point
        pass
