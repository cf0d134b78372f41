"""Background shell commands: a subprocess in its own process group, with bounded output.

The command runs under ``/bin/sh`` (``cmd.exe`` on Windows) in a new session, so that a timeout,
a cancelled call or the server stopping can end the command *and everything it started* by
signalling the group. stdout and stderr are read incrementally and only the first
:data:`OUTPUT_CAP_BYTES` of each are kept, so a noisy command cannot exhaust the server's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: Bytes of stdout and of stderr kept per command; the rest is read and discarded.
OUTPUT_CAP_BYTES = 1024 * 1024
#: Timeout when the caller gives none, and the largest one accepted (milliseconds).
DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
#: After the command's shell exits, how long its output may still take to drain (seconds).
DRAIN_GRACE = 1.0
#: After SIGTERM, how long the group has before SIGKILL (seconds).
KILL_GRACE = 2.0
#: Bytes of a command's latest output kept for its progress reports.
TAIL_BYTES = 1024
#: Seconds between two progress reports of a running command.
REPORT_EVERY = 1.0

log = logging.getLogger(__name__)


def iso(timestamp: float) -> str:
    """An epoch timestamp as ISO 8601 UTC with milliseconds."""
    return (
        datetime.fromtimestamp(timestamp, tz=timezone.utc)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


@dataclass
class Activity:
    """Something running that ``get_progress_indicators`` reports."""

    id: int
    title: str
    kind: str
    started: float = field(default_factory=time.time)

    def as_indicator(self) -> dict[str, Any]:
        """The progress-indicator form: title, kind, start time (ISO) and elapsed time."""
        return {
            "id": str(self.id),
            "title": self.title,
            "kind": self.kind,
            "startTime": iso(self.started),
            "elapsedMs": max(0, round((time.time() - self.started) * 1000)),
        }


class BackgroundCommands:
    """The background commands running now, and their process groups for shutdown."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self.running: dict[int, Activity] = {}
        self._groups: dict[int, int] = {}

    def begin(self, command: str) -> Activity:
        """Register a command that is starting."""
        shown = command if len(command) <= 120 else command[:117] + "..."
        activity = Activity(next(self._ids), f"Background command: {shown}", "backgroundCommand")
        self.running[activity.id] = activity
        return activity

    def attach(self, activity: Activity, pgid: int) -> None:
        """Remember the process group of a started command."""
        self._groups[activity.id] = pgid

    def end(self, activity: Activity) -> None:
        """Forget a command that finished."""
        self.running.pop(activity.id, None)
        self._groups.pop(activity.id, None)

    def indicators(self) -> list[dict[str, Any]]:
        """Progress indicators of the running commands, oldest first."""
        return [a.as_indicator() for a in sorted(self.running.values(), key=lambda a: a.started)]

    async def shutdown(self) -> None:
        """Stop every running command's process group (the server is stopping)."""
        await asyncio.gather(*(kill_group(pgid) for pgid in self.groups()))

    def groups(self) -> list[int]:
        """The process groups of the running commands."""
        return list(self._groups.values())


def group_alive(pgid: int) -> bool:
    """True while a live (non-zombie) process belongs to process group ``pgid``.

    ``killpg(pgid, 0)`` answers the common case (the group is empty) without looking at other
    processes. A signal is also delivered to zombies, though, and orphans nobody reaps (a
    container whose init does not reap) stay zombies, so a group that still answers is checked
    member by member: its leader first, and only then the process table.
    """
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # members we may not signal are not ours to stop
        return False
    if not Path("/proc").is_dir():  # pragma: no cover - no process table to tell zombies apart
        return True
    leader = _state_and_group(f"/proc/{pgid}/stat")
    if leader is not None and leader[1] == pgid and leader[0] != "Z":
        return True
    with os.scandir("/proc") as entries:
        for entry in entries:
            if entry.name.isdigit():
                found = _state_and_group(f"/proc/{entry.name}/stat")
                if found is not None and found[1] == pgid and found[0] != "Z":
                    return True
    return False


def _state_and_group(stat_path: str) -> tuple[str, int] | None:
    """The state letter and process group of a ``/proc/<pid>/stat`` file (None when gone)."""
    try:
        with open(stat_path, encoding="utf-8", errors="replace") as f:
            stat = f.read()
    except OSError:
        return None
    # Fields after the parenthesised command: state, ppid, pgrp, …
    fields = stat[stat.rfind(")") + 2 :].split()
    if len(fields) < 3 or not fields[2].lstrip("-").isdigit():
        return None
    return fields[0], int(fields[2])


async def kill_group(pgid: int, *, grace: float = KILL_GRACE, terminate: bool = True) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left after ``grace`` seconds.

    ``terminate=False`` when the group was sent its SIGTERM already: a second one would land
    in the middle of the clean-up the first one started (killing the commands a trap runs),
    so the group only gets the rest of its grace, then SIGKILL.
    """
    if sys.platform == "win32":  # pragma: no cover - no process groups to signal
        return
    if terminate:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
            os.killpg(pgid, signal.SIGCONT)  # a stopped process must run to see SIGTERM
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not await asyncio.to_thread(group_alive, pgid):
            return
        await asyncio.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_groups_now(pgids: Iterable[int], grace: float = KILL_GRACE) -> None:
    """:func:`kill_group` for a process that is exiting, every group at once: blocks, needs no
    event loop. All get SIGTERM together and share one grace period before SIGKILL, so ending
    many groups takes ``grace`` seconds, not that many times it. The caller's own group is never
    signalled."""
    if sys.platform == "win32":  # pragma: no cover - no process groups to signal
        return
    own = os.getpgrp()
    groups = [pgid for pgid in dict.fromkeys(pgids) if pgid > 1 and pgid != own]
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGTERM)
            os.killpg(pgid, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while any(group_alive(pgid) for pgid in groups) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


class _Capture:
    """The first ``cap`` bytes of a stream; the rest is counted and dropped."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.total = 0
        #: The stream's latest bytes, kept past the cap: what a progress report shows.
        self.tail = b""

    async def pump(self, stream: asyncio.StreamReader) -> None:
        while True:
            chunk = await stream.read(65536)
            if not chunk:
                return
            self.total += len(chunk)
            self.tail = (self.tail + chunk)[-TAIL_BYTES:]
            room = self.cap - len(self.data)
            if room > 0:
                self.data += chunk[:room]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.data)

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace").rstrip("\n")

    def last_line(self) -> str:
        """The last line the stream printed (empty before any)."""
        lines = self.tail.decode("utf-8", errors="replace").replace("\r", "\n").split("\n")
        return next((line.strip() for line in reversed(lines) if line.strip()), "")[:200]


#: ``report(elapsed_seconds, message)``: what a running command is doing, for its caller.
CommandReporter = Callable[[float, str], None]


def command_summary(command: str, limit: int = 80) -> str:
    """A command as a status message names it: one line, at most ``limit`` characters."""
    line = " ".join(command.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


async def _report_while_running(
    report: CommandReporter, command: str, out: _Capture, err: _Capture
) -> None:
    """Every :data:`REPORT_EVERY` seconds: which command runs, for how long, its last line."""
    started = time.monotonic()
    shown = command_summary(command)
    while True:
        await asyncio.sleep(REPORT_EVERY)
        elapsed = time.monotonic() - started
        last = err.last_line() if err.total and not out.total else out.last_line()
        message = f"`{shown}` running for {elapsed:.1f} s" + (f": {last}" if last else "")
        try:
            report(elapsed, message)
        except Exception:  # a lost report never fails the command
            log.debug("a command's progress report was dropped", exc_info=True)


async def run_shell(
    command: str,
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout_ms: float = DEFAULT_TIMEOUT_MS,
    cap: int = OUTPUT_CAP_BYTES,
    tracker: BackgroundCommands | None = None,
    report: CommandReporter | None = None,
) -> dict[str, Any]:
    """Run ``command`` in a shell and return ``{stdout, stderr, exitCode, timedOut, truncated}``.

    ``report`` is told every second what runs (the command, its time, its last output line).

    On timeout, and when the awaiting task is cancelled, the command's whole process group is
    terminated (SIGTERM, then SIGKILL). Processes the command leaves running in its group once
    its shell has exited are stopped too, so nothing outlives the call. ``exitCode`` is null
    when the command timed out; a negative code means a signal ended it.
    """
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    activity = tracker.begin(command) if tracker else None
    started = time.monotonic()
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_shell(
            command,
            cwd=str(cwd),
            env=full_env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    )
    try:
        # Shielded: cancelled between the fork and the pipes' connection, asyncio's own
        # clean-up kills the shell alone (what it started lives on) and then waits for an
        # exit it may never hear of (a call hung there for 300 s in CI). The start is let
        # finish, and a cancelled call ends the whole group as below.
        proc = await asyncio.shield(spawn)
    except asyncio.CancelledError:
        try:
            spawned = await _settled(spawn)
        except Exception:  # the start failed: nothing runs
            if tracker and activity:
                tracker.end(activity)
        else:
            # Listed until its group is gone, as a command cancelled later is.
            await asyncio.shield(_finish(spawned, None, tracker, activity))
        raise
    except BaseException:
        if tracker and activity:
            tracker.end(activity)
        raise
    if tracker and activity:
        tracker.attach(activity, proc.pid)
    out, err = _Capture(cap), _Capture(cap)
    assert proc.stdout is not None and proc.stderr is not None
    pumps = asyncio.gather(out.pump(proc.stdout), err.pump(proc.stderr))
    reporting = (
        asyncio.get_running_loop().create_task(_report_while_running(report, command, out, err))
        if report is not None
        else None
    )
    timed_out = False
    try:
        try:
            await asyncio.wait_for(_exited(proc), timeout_ms / 1000)
        except asyncio.TimeoutError:
            timed_out = True
        else:
            # The shell exited; give its output (and children holding the pipes) a moment.
            remaining = timeout_ms / 1000 - (time.monotonic() - started)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(pumps), max(0.0, min(DRAIN_GRACE, remaining)))
    finally:
        # Runs on success, timeout and cancellation alike: nothing of the group survives. The
        # command stays listed until its group is gone, even when this task is cancelled again
        # while it waits (anyio's cancel scopes keep cancelling until the call has returned).
        if reporting is not None:
            reporting.cancel()
        await asyncio.shield(_finish(proc, pumps, tracker, activity))
    result: dict[str, Any] = {
        "stdout": out.text(),
        "stderr": err.text(),
        "exitCode": None if timed_out else proc.returncode,
        "timedOut": timed_out,
        "truncated": out.truncated or err.truncated,
    }
    if timed_out:
        result["message"] = (
            f"Command timed out after {timeout_ms:g} ms; its process group was killed"
        )
    if result["truncated"]:
        result["outputCapBytes"] = cap
        result["stdoutBytes"] = out.total
        result["stderrBytes"] = err.total
    return result


async def _exited(proc: asyncio.subprocess.Process) -> int:
    # Not proc.wait(): it also waits for the pipes to close, which a leftover child that holds
    # them delays indefinitely.
    while proc.returncode is None:
        await asyncio.sleep(0.02)
    return proc.returncode


async def _finish(
    proc: asyncio.subprocess.Process,
    pumps: asyncio.Future[Any] | None,
    tracker: BackgroundCommands | None,
    activity: Activity | None,
) -> None:
    try:
        await _end_group(proc, pumps)
    finally:
        if tracker and activity:
            tracker.end(activity)


async def _settled(future: asyncio.Future[T]) -> T:
    """``future``'s result, waited for through any number of cancellations of the caller
    (anyio's cancel scopes cancel again at every await)."""
    while True:
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            if future.done():
                return future.result()


async def _end_group(proc: asyncio.subprocess.Process, pumps: asyncio.Future[Any] | None) -> None:
    if sys.platform != "win32" and (
        proc.returncode is None or await asyncio.to_thread(group_alive, proc.pid)
    ):
        await kill_group(proc.pid)
    with contextlib.suppress(ProcessLookupError):
        if proc.returncode is None:
            proc.kill()
    await _exited(proc)
    if pumps is None:  # cancelled while it started: nobody reads its output
        return
    try:
        await asyncio.wait_for(pumps, 5)
    except (asyncio.TimeoutError, asyncio.CancelledError):
        pumps.cancel()
