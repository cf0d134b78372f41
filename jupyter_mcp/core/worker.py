"""A Python worker process that answers requests, for work the server must never wait on.

Search and code analysis each keep one long-lived child process (its index and caches live
there, and its CPU time and garbage collection never hold the server's interpreter). The
server side is a :class:`WorkerProcess`: it starts the child on first use, sends a request,
waits at most ``timeout`` seconds for the answer (a child that takes longer is killed, and the
next call starts a fresh one) and starts a new child when the old one died.

The child is ``python -m jupyter_mcp.core.worker MODULE ARG…``: it calls ``MODULE.worker_handler(
ARG…)`` once and then answers each request with ``handler(request)``. Requests and answers
travel over the child's stdin and stdout as :mod:`multiprocessing.connection` messages; the
child's own standard output is redirected to standard error first, so nothing printed by
accident (Python or C) can corrupt an answer. A :class:`~jupyter_mcp.core.errors.ToolError` raised
by the handler reaches the caller as a ToolError with the same message.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from .cancel import CANCEL_POLL, CallCancelled, acquire, call_cancelled
from .errors import ToolError
from .paths import worker_environment

log = logging.getLogger("jupyter_mcp.core.worker")


class WorkerTimeout(Exception):
    """The child did not answer in time; it was stopped."""


class WorkerBusy(WorkerTimeout):
    """Other calls kept the worker busy for the whole time limit; this one was never sent."""


class WorkerFailed(Exception):
    """The child could not be started, or stopped (or broke its pipe) during a request."""


class WorkerStartFailed(WorkerFailed):
    """The child process could not be started at all."""


class WorkerDied(WorkerFailed):
    """The child stopped while it worked on the request (it had received it)."""


class WorkerProcess:
    """The server's handle on one worker child process. Thread-safe; calls are serialised."""

    def __init__(
        self, module: str, *args: str, timeout: float, cwd: Path | str | None = None
    ) -> None:
        self.module = module
        self.args = args
        self.timeout = timeout
        self.cwd = cwd
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._requests: Connection | None = None
        self._answers: Connection | None = None
        self._closed = False

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        """The child process, None before the first call and after a stop."""
        return self._proc

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._closed

    def start(self) -> bool:
        """Start the child unless it is running; True when a new one was started."""
        with self._lock:
            return self._ensure_started()

    def call(self, request: Any, *, timeout: float | None = None, start: bool = True) -> Any:
        """Send ``request`` and return the handler's answer (starting the child if needed;
        with ``start=False`` a child that is not running is a :class:`WorkerFailed`).

        Waits at most ``timeout`` seconds (default: the worker's ``timeout``), counted from
        the call, including any wait for another thread's call. Raises :class:`WorkerTimeout`
        (the child was killed; :class:`WorkerBusy` when other calls took all the time),
        :class:`WorkerFailed` (the child could not start or died; the next call starts a new
        one), :class:`~jupyter_mcp.core.cancel.CallCancelled` (the call this thread works for
        was cancelled: the child was stopped, or the request never sent), or the handler's
        :class:`ToolError`.
        """
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        if not acquire(self._lock, limit, "it was waiting for the worker"):
            raise WorkerBusy(f"the worker was busy for {limit:g} s")
        try:
            if self._closed:
                raise WorkerFailed("the worker was shut down")
            if start:
                self._ensure_started()
            elif self._proc is None or self._proc.poll() is not None:
                self._stop()
                raise WorkerFailed("the worker process is not running")
            assert self._requests is not None and self._answers is not None
            try:
                self._requests.send(request)
            except OSError as e:  # it was gone before it got the request
                self._stop()
                raise WorkerFailed(str(e) or type(e).__name__) from e
            try:
                # In slices: a cancelled call stops the child (the only way to stop its work;
                # the next call starts a fresh one) rather than keep it busy for everyone.
                while not self._answers.poll(
                    max(0.0, min(CANCEL_POLL, deadline - time.monotonic()))
                ):
                    if call_cancelled():
                        self._stop()
                        raise CallCancelled("its worker process was stopped")
                    if time.monotonic() >= deadline:
                        self._stop()
                        raise WorkerTimeout(f"no answer within {limit:g} s")
                status, value = self._answers.recv()
            except (EOFError, OSError) as e:
                how = self._ended()
                self._stop()
                raise WorkerDied(how or str(e) or type(e).__name__) from e
        finally:
            self._lock.release()
        if status != "ok":
            raise ToolError(value)
        return value

    def close(self) -> None:
        """Stop the child for good; later calls raise :class:`WorkerFailed`."""
        self._closed = True
        with self._lock:
            self._stop()

    def _ensure_started(self) -> bool:
        if self._proc is not None and self._proc.poll() is None:
            return False
        self._stop()
        # The child imports this very package, wherever the server imported it from.
        package_parent = str(Path(__file__).resolve().parent.parent)
        # The child seals what the server seals (see core/paths.py).
        env = {**os.environ, **worker_environment()}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", "jupyter_mcp.core.worker", self.module, *self.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                cwd=self.cwd,
                env=env,
            )
        except OSError as e:
            raise WorkerStartFailed(f"could not start {sys.executable}: {e}") from e
        assert proc.stdin is not None and proc.stdout is not None
        self._requests = Connection(os.dup(proc.stdin.fileno()), readable=False)
        self._answers = Connection(os.dup(proc.stdout.fileno()), writable=False)
        proc.stdin.close()
        proc.stdout.close()
        self._proc = proc
        return True

    def _ended(self) -> str:
        """How the child ended ("killed by signal 9", "exited with status 1"); "" if alive."""
        proc = self._proc
        if proc is None:
            return ""
        try:
            code = proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            return ""
        return f"killed by signal {-code}" if code < 0 else f"exited with status {code}"

    def _stop(self) -> None:
        for conn in (self._requests, self._answers):
            if conn is not None:
                with contextlib.suppress(OSError):
                    conn.close()
        self._requests = self._answers = None
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)


def main() -> None:
    """Entry point of the child: ``python -m jupyter_mcp.core.worker MODULE ARG…``."""
    module_name, *args = sys.argv[1:]
    # jsonschema (under nbformat, which reads notebooks here) imports rfc3987_syntax when it
    # is installed, and that builds a parser at import: a second of start-up on a busy machine,
    # for "iri" format checks no worker makes. Without it jsonschema just skips those formats.
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
    answer_fd = os.dup(1)
    os.dup2(2, 1)  # anything printed by accident goes to stderr, never into the answers
    sys.stdout = sys.stderr
    logging.basicConfig(level=logging.WARNING, format=f"[{module_name} worker] %(message)s")
    requests = Connection(0, writable=False)
    answers = Connection(answer_fd, readable=False)
    handler = importlib.import_module(module_name).worker_handler(*args)
    try:
        while True:
            try:
                request = requests.recv()
            except (EOFError, OSError):
                return  # the server went away
            try:
                answer: tuple[str, Any] = ("ok", handler(request))
            except ToolError as e:
                answer = ("error", e.message)
            except Exception as e:  # a bug in one request must not take the worker down
                log.exception("request failed")
                answer = ("error", f"{type(e).__name__}: {e}")
            try:
                answers.send(answer)
            except OSError:
                return
            except Exception as e:  # the answer could not be pickled: nothing was sent
                answers.send(("error", f"The answer could not be sent ({type(e).__name__}: {e})"))
    finally:
        close = getattr(handler, "close", None)
        if close is not None:
            close()


if __name__ == "__main__":
    main()
