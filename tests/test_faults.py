"""Faults: helpers and kernels that die, clients that leave, writes that fail half-way, a full
disk, a server restarted under its clients.

Each test breaks something for real (a signal to a real process, a real disconnect, a failing
rename or a file-size limit, a small tmpfs filled to its last byte, a server process stopped
and started again) and then checks that nothing was lost and the server still answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
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
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import nbformat
import pytest
from local_servers import free_port, restartable_port
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_messages import INITIALIZED, initialize
from process_table import processes_with
from server_process import ServerProcess, server_process

from jupyter_mcp.core.context import ToolContext
from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.documents import files
from jupyter_mcp.services import build_services
from jupyter_mcp.tools.files import create_new_file_with_text, rewrite_file_content


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


def test_a_failing_write_of_a_new_file_leaves_no_folder_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = _project(tmp_path)
    (tmp_path / "kept").mkdir()

    def failing_replace(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", failing_replace)
    for where in ("new/deeper/b.txt", "kept/new/b.txt"):
        with pytest.raises(ToolError, match="No space left on device"):
            create_new_file_with_text(ctx, pathInProject=where, text="b\n")
    # The folders the writes made are gone again; the one that was there stays
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == ["kept"]


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
        from jupyter_mcp.tools.files import create_new_file_with_text, rewrite_file_content

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
    opening = initialize(LEGACY, client="leaving")
    opened = await http.post(url, content=json.dumps(opening), headers=headers)
    headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
    headers["MCP-Protocol-Version"] = LEGACY
    await http.post(url, content=json.dumps(INITIALIZED), headers=headers)


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
    port, token = free_port(), uuid.uuid4().hex
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


# --- a server in a process of its own, and the SDK's clients of it -------------------------


@asynccontextmanager
async def _sdk_client(server: ServerProcess, mode: str) -> AsyncIterator[Client]:
    """An official SDK client of ``server``'s ``/mcp`` in ``mode`` (``legacy``: a 2025-11-25
    session; ``2026-07-28``: the stateless era)."""
    timeout = httpx2.Timeout(60, read=300)
    headers = {"Authorization": f"token {server.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
        transport = streamable_http_client(f"{server.url}mcp", http_client=http)
        async with Client(transport, mode=mode) as client:
            yield client


async def _answer(client: Client, tool: str, **arguments: Any) -> tuple[bool, Any]:
    """``(ok, answer)`` of one call: the parsed result, or the error's text."""
    result = await client.call_tool(tool, arguments)
    text = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
    if result.is_error:
        return False, text
    if result.structured_content is not None:
        return True, result.structured_content
    try:
        return True, json.loads(text)
    except ValueError:
        return True, text


async def _good(client: Client, tool: str, **arguments: Any) -> Any:
    ok, answer = await _answer(client, tool, **arguments)
    assert ok, f"{tool}: {answer}"
    return answer


async def _refused(client: Client, tool: str, **arguments: Any) -> str:
    ok, answer = await _answer(client, tool, **arguments)
    assert not ok, f"{tool} succeeded: {answer}"
    assert "failed unexpectedly" not in answer, answer
    return str(answer)


def _texts(cell: dict[str, Any]) -> list[str]:
    return [o.get("text", "") for o in cell.get("outputs", [])]


# --- a full disk -------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB file system (tmpfs), mounted for the test and unmounted after it."""
    disk = tmp_path / "disk"
    disk.mkdir()
    try:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs", str(disk)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except FileNotFoundError:
        pytest.skip("no mount command here: a full disk needs a small tmpfs of its own")
    if mounted.returncode != 0:
        pytest.skip(
            "this machine does not let the tests mount a small tmpfs (a full disk needs one): "
            + (mounted.stderr.strip() or f"mount exited {mounted.returncode}")
        )
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True, timeout=60)


def _fill(disk: Path) -> Path:
    """Fill ``disk`` to its last byte with a file of its own (outside the project)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (1 << 16, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    with pytest.raises(OSError) as full:
        (disk / "probe").write_bytes(b"x")
    assert full.value.errno == errno.ENOSPC
    (disk / "probe").unlink(missing_ok=True)
    return filler


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``root``."""
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


async def test_a_full_disk_refuses_writes_and_saves_clearly_and_leaves_every_file_whole(
    tmp_path: Path, small_disk: Path
) -> None:
    root = small_disk / "project"
    root.mkdir()
    (root / "a.txt").write_text("the old text\n" * 200)
    nb = nbformat_v4_notebook()
    nb["cells"] = [
        nbformat.v4.new_code_cell("print('first')", id="c0"),
        nbformat.v4.new_code_cell("print('second ' * 100)", id="c1"),
    ]
    (root / "n.ipynb").write_text(nbformat.writes(nbformat.from_dict(nb)))
    # File mode: no shared documents, the notebook is changed in its file.
    with server_process(
        tmp_path / "home", root, extensions={"jupyter_server_ydoc": False}
    ) as server:
        async with _sdk_client(server, "legacy") as client:
            ran = await _good(
                client, "execute_notebook_cells", pathInProject="n.ipynb", cellIds=["c0"]
            )
            assert ran["status"] == "ok", ran
            before = _tree(root)
            # When the disk is full
            filler = _fill(small_disk)
            # Then every write says so, and nothing in the project changed
            message = await _refused(
                client, "rewrite_file_content", pathInProject="a.txt", text="the new text\n" * 400
            )
            assert "No space left on device" in message and "a.txt" in message, message
            message = await _refused(
                client, "create_new_file_with_text", pathInProject="new/b.txt", text="b\n" * 100
            )
            assert "No space left on device" in message, message
            message = await _refused(
                client, "append_file_content", pathInProject="a.txt", text="more\n" * 100
            )
            assert "No space left on device" in message, message
            message = await _refused(
                client,
                "edit_notebook_cell",
                pathInProject="n.ipynb",
                cellId="c0",
                source="print('changed')",
            )
            assert "No space left on device" in message and "n.ipynb" in message, message
            assert _tree(root) == before
            # A run still runs, and its answer has its outputs and says they are not saved
            ran = await _good(
                client, "execute_notebook_cells", pathInProject="n.ipynb", cellIds=["c1"]
            )
            assert ran["status"] == "ok", ran
            assert [_texts(c) for c in ran["cells"]] == [["second " * 100 + "\n"]], ran
            assert "No space left on device" in ran["notebookError"], ran
            assert "they are in this answer" in ran["notebookError"], ran
            assert _tree(root) == before
            nbformat.validate(nbformat.read(root / "n.ipynb", as_version=4))
            # And once there is space again, everything works as before
            filler.unlink()
            await _good(
                client, "rewrite_file_content", pathInProject="a.txt", text="the new text\n" * 400
            )
            assert (root / "a.txt").read_text() == "the new text\n" * 400
            await _good(client, "create_new_file_with_text", pathInProject="new/b.txt", text="b\n")
            assert (root / "new" / "b.txt").read_text() == "b\n"
            await _good(
                client,
                "edit_notebook_cell",
                pathInProject="n.ipynb",
                cellId="c0",
                source="print('changed')",
            )
            ran = await _good(client, "execute_notebook_cells", pathInProject="n.ipynb")
            assert ran["status"] == "ok", ran
            saved = nbformat.read(root / "n.ipynb", as_version=4)
            nbformat.validate(saved)
            assert [_texts(c) for c in saved.cells] == [["changed\n"], ["second " * 100 + "\n"]]
            assert sorted(p.name for p in root.iterdir()) == ["a.txt", "n.ipynb", "new"]


# --- the server restarted under a connected client -----------------------------------------

#: Longest a client's call may take before the test calls it a hang (a busy machine included).
HANG = 120


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_server_restarted_under_a_client_answers_its_next_call_without_a_hang(
    tmp_path: Path, mode: str
) -> None:
    # The client calls again once the new server listens: while none does, the SDK's client
    # itself ends on the refused connection (its transport's task group fails), whatever the
    # server would do.
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("before\n")
    home = tmp_path / "home"
    # Outside the ports the OS hands out, so nothing takes it between the stop and the restart
    port, token = restartable_port(), uuid.uuid4().hex
    with contextlib.ExitStack() as servers:
        first = contextlib.ExitStack()
        servers.callback(first.close)
        server = first.enter_context(server_process(home, root, port=port, token=token))
        async with _sdk_client(server, mode) as client:
            read = await _good(client, "get_file_text_by_path", pathInProject="a.txt")
            assert read["content"] == "before\n"
            # When the server stops under the connected client and a new one starts on the
            # same address (its session, if it had one, gone with the old process)
            await asyncio.to_thread(first.close)
            (root / "a.txt").write_text("after\n")
            again = await asyncio.to_thread(
                servers.enter_context, server_process(home, root, port=port, token=token)
            )
            # Then the client's next call is answered: by the new server, or with a clean error
            try:
                answered = await asyncio.wait_for(
                    _answer(client, "get_file_text_by_path", pathInProject="a.txt"), HANG
                )
            except TimeoutError:
                pytest.fail(f"the {mode} client's call hung on the restarted server")
            except MCPError as e:  # a clean error: the session is gone with the server
                assert mode == "legacy", f"a stateless client failed: {e!r}"
                assert "Session not found" in str(e), e
                answered = None
            if answered is not None:
                assert answered == (True, {**read, "content": "after\n"}), answered
            # And a new session works (the old client's goodbye, on leaving, is bounded by its
            # HTTP timeouts)
            async with _sdk_client(again, mode) as fresh:
                read = await _good(fresh, "get_file_text_by_path", pathInProject="a.txt")
                assert read["content"] == "after\n"


# --- a kernel killed by the OOM killer's signal under load --------------------------------


def _kernel_pid(server: ServerProcess, path: str) -> int:
    """The process of the kernel that the server's session for ``path`` holds."""
    request = urllib.request.Request(
        f"{server.url}api/sessions", headers={"Authorization": f"token {server.token}"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        sessions = json.loads(response.read())
    (kernel_id,) = [s["kernel"]["id"] for s in sessions if s["path"] == path]
    pids = [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit() and f"kernel-{kernel_id}.json" in _command_line(int(entry.name))
    ]
    assert len(pids) == 1, pids
    return pids[0]


async def _steady_runs(
    client: Client, path: str, tag: str, stop: asyncio.Event, done: list[str]
) -> None:
    """Insert, run and read back cells in ``path`` until ``stop``: each must show its own line."""
    n = 0
    while not stop.is_set():
        wanted = f"{tag} {n}"
        inserted = await _good(
            client, "insert_notebook_cell", pathInProject=path, source=f"print({wanted!r})"
        )
        ran = await _good(
            client, "execute_notebook_cells", pathInProject=path, cellIds=[inserted["cellId"]]
        )
        assert ran["status"] == "ok", ran
        assert [_texts(c) for c in ran["cells"]] == [[wanted + "\n"]], ran
        done.append(wanted)
        n += 1


async def test_a_kernel_killed_mid_run_under_load_says_so_and_other_notebooks_go_on(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    for name in ("dies", "left", "right"):
        nb = nbformat_v4_notebook()
        (root / f"{name}.ipynb").write_text(nbformat.writes(nbformat.from_dict(nb)))
    with server_process(
        tmp_path / "home", root, extensions={"jupyter_server_ydoc": False}
    ) as server:
        async with (
            _sdk_client(server, "legacy") as victim,
            _sdk_client(server, "legacy") as left,
            _sdk_client(server, "2026-07-28") as right,
        ):
            stop = asyncio.Event()
            done: dict[str, list[str]] = {"left": [], "right": []}
            others = [
                asyncio.ensure_future(_steady_runs(c, f"{tag}.ipynb", tag, stop, done[tag]))
                for c, tag in ((left, "left"), (right, "right"))
            ]

            def broke() -> bool:
                return any(t.done() for t in others)

            set_up = await _good(
                victim, "insert_notebook_cell", pathInProject="dies.ipynb", source="before = 1"
            )
            await _good(
                victim,
                "execute_notebook_cells",
                pathInProject="dies.ipynb",
                cellIds=[set_up["cellId"]],
            )
            long = await _good(
                victim,
                "insert_notebook_cell",
                pathInProject="dies.ipynb",
                source="import time\nprint('started', flush=True)\ntime.sleep(600)",
            )
            running = asyncio.ensure_future(
                _answer(
                    victim,
                    "execute_notebook_cells",
                    pathInProject="dies.ipynb",
                    cellIds=[long["cellId"]],
                )
            )

            def started() -> bool:
                with contextlib.suppress(Exception):
                    cells = nbformat.read(root / "dies.ipynb", as_version=4).cells
                    return any("started\n" in _texts(c) for c in cells)
                return False

            assert await _until(started, HANG), "the long cell did not start"
            assert await _until(lambda: broke() or all(len(d) >= 2 for d in done.values()), HANG), (
                "the other notebooks did not run"
            )
            assert not broke(), [t.result() for t in others if t.done()]
            # When the kernel is killed as the OOM killer kills it, while the others run cells
            killed_at = {tag: len(d) for tag, d in done.items()}
            os.kill(_kernel_pid(server, "dies.ipynb"), signal.SIGKILL)
            # Then the run answers that the kernel died, with what it printed
            ok, ran = await asyncio.wait_for(running, HANG)
            assert ok, ran
            assert ran["status"] == "error", ran
            assert "kernel died" in ran["error"], ran
            assert [(c["cellId"], c["status"]) for c in ran["cells"]] == [(long["cellId"], "died")]
            assert _texts(ran["cells"][0]) == ["started\n"]
            # The notebook is still a valid notebook, with that cell's output kept
            saved = nbformat.read(root / "dies.ipynb", as_version=4)
            nbformat.validate(saved)
            assert _texts(saved.cells[1]) == ["started\n"]
            # And the next run works, in a restarted kernel (the variables are gone)
            again = await _good(
                victim, "insert_notebook_cell", pathInProject="dies.ipynb", source="print('again')"
            )
            ran = await asyncio.wait_for(
                _good(
                    victim,
                    "execute_notebook_cells",
                    pathInProject="dies.ipynb",
                    cellIds=[again["cellId"]],
                ),
                HANG,
            )
            assert ran["status"] == "ok", ran
            assert [_texts(c) for c in ran["cells"]] == [["again\n"]]
            gone = await _good(
                victim, "execute_code_in_kernel", pathInProject="dies.ipynb", code="before"
            )
            assert gone["outputs"][0]["ename"] == "NameError", gone
            # The other notebooks' runs went on throughout, each output in its own notebook
            assert await _until(
                lambda: broke() or all(len(d) >= killed_at[tag] + 3 for tag, d in done.items()),
                HANG,
            ), {tag: (killed_at[tag], len(d)) for tag, d in done.items()}
            assert not broke(), [t.result() for t in others if t.done()]
            stop.set()
            await asyncio.wait_for(asyncio.gather(*others), HANG)
            for tag, lines in done.items():
                cells = nbformat.read(root / f"{tag}.ipynb", as_version=4).cells
                assert [_texts(c) for c in cells] == [[line + "\n"] for line in lines]
