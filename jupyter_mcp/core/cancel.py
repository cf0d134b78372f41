"""A thread-run tool call's cancellation, as its worker thread sees it.

A tool written as a plain function runs in a worker thread (:func:`~jupyter_mcp.core.registry.
run_tool`); cancelling its call (a client's cancel, a task cancelled, the session gone) cancels
only the coroutine awaiting that thread, and the thread would go on until its own time limit,
holding the search or code worker (every other call waits behind it) or a git process. So
:func:`run_tool` gives each such call an event it sets when the call is cancelled, and the code
that waits long on the call's behalf (:class:`~jupyter_mcp.core.worker.WorkerProcess`) waits
in slices, asking :func:`call_cancelled` between them, and stops the work it waits for.
"""

from __future__ import annotations

import contextvars
import threading
import time

from .errors import ToolError

#: How often a wait on a call's behalf looks whether the call was cancelled (seconds).
CANCEL_POLL = 0.2

_cancelled: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar(
    "jupyter_mcp_call_cancelled", default=None
)


class CallCancelled(ToolError):
    """The call this thread works for was cancelled; what it waited for was stopped."""

    def __init__(self, what: str) -> None:
        super().__init__(f"The call was cancelled; {what}")


def cancel_event(context: contextvars.Context) -> threading.Event:
    """A new event in ``context`` (a copy the call's thread runs in), set on cancelling."""
    event = threading.Event()
    context.run(_cancelled.set, event)
    return event


def call_cancelled() -> bool:
    """True when the call this thread runs for was cancelled (False outside such a call)."""
    event = _cancelled.get()
    return event is not None and event.is_set()


def acquire(lock: threading.Lock, timeout: float, what: str) -> bool:
    """``lock.acquire(timeout=timeout)``, given up (:class:`CallCancelled`) when the call is
    cancelled meanwhile: a cancelled call does not queue for a worker it no longer needs."""
    if _cancelled.get() is None:
        return lock.acquire(timeout=max(0.0, timeout))
    deadline = _now() + max(0.0, timeout)
    while True:
        if call_cancelled():
            raise CallCancelled(what)
        if lock.acquire(timeout=max(0.0, min(CANCEL_POLL, deadline - _now()))):
            if call_cancelled():  # meanwhile: it is no longer needed
                lock.release()
                raise CallCancelled(what)
            return True
        if _now() >= deadline:
            return False


def _now() -> float:
    return time.monotonic()
