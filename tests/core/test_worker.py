"""The worker process behind search and code analysis, with a real child process.

The child runs a small handler module written to a temporary folder (put on PYTHONPATH), so
every path of :class:`jupyter_mcp.core.worker.WorkerProcess` is exercised against a real process:
answers, errors, output printed by accident, time limits, death and shutdown.
"""

from __future__ import annotations

import contextvars
import os
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.core.worker import (
    WorkerBusy,
    WorkerFailed,
    WorkerProcess,
    WorkerStartFailed,
    WorkerTimeout,
)

HANDLER = """
import os
import sys
import time

from jupyter_mcp.core.errors import ToolError


class Handler:
    def __init__(self, prefix, marker):
        self.prefix = prefix
        self.marker = marker

    def __call__(self, request):
        op, value = request
        if op == "echo":
            print("printed by accident")
            os.write(1, b"written to fd 1 by accident\\n")
            return self.prefix + value
        if op == "refuse":
            raise ToolError("refused: " + value)
        if op == "bug":
            raise ValueError(value)
        if op == "unpicklable":
            return lambda: None
        if op == "sleep":
            time.sleep(value)
            return "slept"
        if op == "exit":
            os._exit(3)
        if op == "pid":
            return os.getpid()

    def close(self):
        with open(self.marker, "w") as f:
            f.write("closed")


def worker_handler(prefix, marker):
    return Handler(prefix, marker)
"""


@pytest.fixture
def worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[WorkerProcess]:
    """A worker running the test handler, closed at the end."""
    (tmp_path / "echo_handler.py").write_text(textwrap.dedent(HANDLER))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    found = WorkerProcess("echo_handler", "got:", str(tmp_path / "closed.txt"), timeout=30)
    yield found
    found.close()


def _dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A killed child stays a zombie until waited for; WorkerProcess waits for it.
    status = Path(f"/proc/{pid}/status")
    return not status.exists() or "zombie" in status.read_text()


def test_answers_errors_and_stray_output(worker: WorkerProcess) -> None:
    # Given a worker whose handler prints to stdout while answering
    # When it answers requests
    assert worker.call(("echo", "one")) == "got:one"
    pid = worker.call(("pid", None))
    assert worker.call(("echo", "two")) == "got:two"

    # Then the same child answered all of them, and the printed text did not get in the way
    assert worker.call(("pid", None)) == pid
    # And the handler's ToolError arrives as one, other exceptions as a ToolError naming them
    with pytest.raises(ToolError, match="^refused: no$"):
        worker.call(("refuse", "no"))
    with pytest.raises(ToolError, match="ValueError: broken"):
        worker.call(("bug", "broken"))
    with pytest.raises(ToolError, match="could not be sent"):
        worker.call(("unpicklable", None))
    # And none of these took the child down
    assert worker.call(("pid", None)) == pid


def test_a_call_over_its_time_is_stopped_and_the_next_gets_a_new_child(
    worker: WorkerProcess,
) -> None:
    pid = worker.call(("pid", None))
    with pytest.raises(WorkerTimeout, match="no answer within 0.5 s"):
        worker.call(("sleep", 60), timeout=0.5)
    assert _dead(pid)
    assert worker.proc is None
    assert worker.call(("pid", None)) != pid


def test_a_child_that_died_is_replaced(worker: WorkerProcess) -> None:
    # Given a child that exits in the middle of a request
    pid = worker.call(("pid", None))
    with pytest.raises(WorkerFailed):
        worker.call(("exit", None))
    # Then the next call starts a new one
    assert worker.call(("pid", None)) != pid

    # And a child killed between calls is noticed: replaced, or refused with start=False
    proc = worker.proc
    assert proc is not None
    proc.kill()
    proc.wait()
    with pytest.raises(WorkerFailed, match="not running"):
        worker.call(("pid", None), start=False)
    assert worker.start() is True
    assert worker.start() is False
    assert worker.call(("echo", "back"), start=False) == "got:back"


def test_a_call_waiting_behind_a_long_one_gives_up_in_time(worker: WorkerProcess) -> None:
    worker.start()
    slow = threading.Thread(target=worker.call, args=(("sleep", 2),))
    slow.start()
    time.sleep(0.2)
    try:
        with pytest.raises(WorkerBusy):
            worker.call(("pid", None), timeout=0.3)
    finally:
        slow.join()
    assert worker.call(("echo", "after")) == "got:after"


def test_a_cancelled_call_stops_the_child_and_one_waiting_behind_it_gives_up(
    worker: WorkerProcess,
) -> None:
    from jupyter_mcp.core.cancel import CallCancelled, cancel_event

    pid = worker.call(("pid", None))
    errors: dict[str, BaseException] = {}

    def cancellable(name: str, request: Any) -> threading.Event:
        """``request`` in a thread of its own, as run_tool runs a tool: the event cancels it."""
        context = contextvars.copy_context()
        event = cancel_event(context)

        def call() -> None:
            try:
                context.run(worker.call, request)
            except BaseException as e:
                errors[name] = e

        threads.append(threading.Thread(target=call))
        threads[-1].start()
        return event

    threads: list[threading.Thread] = []
    running = cancellable("running", ("sleep", 600))
    time.sleep(0.3)
    waiting = cancellable("waiting", ("echo", "never sent"))
    waiting.set()
    running.set()
    for thread in threads:
        thread.join(60)  # bound only against a hang: the sleep is 600 s

    assert not any(t.is_alive() for t in threads)
    assert isinstance(errors["running"], CallCancelled)
    assert "worker process was stopped" in str(errors["running"])
    assert isinstance(errors["waiting"], CallCancelled)
    assert _dead(pid)
    assert worker.call(("echo", "after")) == "got:after"


def test_close_stops_the_child_for_good(worker: WorkerProcess) -> None:
    pid = worker.call(("pid", None))
    worker.close()
    assert worker.closed and worker.proc is None
    assert _dead(pid)
    with pytest.raises(WorkerFailed, match="shut down"):
        worker.call(("pid", None))


def test_the_handler_is_closed_when_the_server_goes_away(
    worker: WorkerProcess, tmp_path: Path
) -> None:
    # Given a running child
    worker.call(("pid", None))
    proc = worker.proc
    assert proc is not None
    # When the server's ends of the pipes close (as when the server exits)
    assert worker._requests is not None and worker._answers is not None
    worker._requests.close()
    worker._answers.close()
    # Then the child closes its handler and exits by itself
    assert proc.wait(timeout=30) == 0
    assert (tmp_path / "closed.txt").read_text() == "closed"


def test_a_child_that_cannot_start_is_a_clear_failure(
    worker: WorkerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.executable", "/nonexistent/python")
    with pytest.raises(WorkerStartFailed, match="could not start /nonexistent/python"):
        worker.call(("pid", None))
