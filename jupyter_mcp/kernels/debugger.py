"""Driving a notebook kernel's debugger: the agent's side of what JupyterLab's debugger does.

ipykernel carries a debugger (debugpy) that speaks the Debug Adapter Protocol over the kernel's
own channels: a ``debug_request`` on the control channel gets a ``debug_reply``, and the
debugger's events (``stopped``, ``continued`` …) arrive as ``debug_event`` on iopub. The
control channel is served by a thread of its own, so it answers while the cell's code is
paused at a breakpoint; the ``execute_request`` of that cell simply has not finished yet.

A :class:`DebugSession` is one such conversation with the kernel of one notebook:

- starting it sends ``initialize`` and ``attach`` (as JupyterLab does), unless the kernel's
  debugger is already on — then JupyterLab (the user) started it, and the session *shares* it:
  one debug state, so the user's debugger panel shows where the agent stopped, and stopping the
  agent's session leaves the user's debugger on;
- the server's breakpoints for the notebook (1-based lines of its percent-format view) are set
  per cell: a cell's code is sent with ``dumpCell``, which answers the file name the kernel
  compiles that code under, and ``setBreakpoints`` takes lines inside the cell;
- a cell runs through the kernel runner (:mod:`jupyter_mcp.kernels.runner`) in the background,
  as a user's run (outputs into the notebook, the count); an action answers when the code
  stops (``stopped`` event), the cell finishes, or its time is up.

ipykernel pairs each debugger request with the next answer it gets from debugpy; a request
that never gets one leaves that pairing off by one, so a request that times out ends the
session rather than risk answering the next request with the wrong reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.paths import is_inside
from ..documents.files import read_notebook_and_view
from ..documents.notebook_view import cell_marker_lines, view_lines_by_cell, view_of_notebook
from . import managers
from .outputs import cut
from .runner import MAX_TIMEOUT_MS, Execution, Step
from .sessions import NotebookKernel, notebook_kernel

if TYPE_CHECKING:
    from nbformat import NotebookNode

log = logging.getLogger("jupyter_mcp")

#: How long one debugger request may take before the session is given up (seconds).
REQUEST_TIMEOUT = 15.0
#: ``attach`` starts debugpy inside the kernel the first time: slower than other requests.
ATTACH_TIMEOUT = 60.0
#: How often a wait checks that the kernel is still the one the session started on (seconds).
ALIVE_POLL = 0.5
#: Characters of a variable's value or an evaluation's result an answer carries.
VALUE_LIMIT = 300
#: How long stopping a session waits for the resumed cell to finish, to report its outputs.
STOP_WAIT = 5.0
#: A session whose cell is stopped and that gets no call for this long is ended (the cell goes
#: on): an agent that went away never leaves the user's kernel paused (seconds).
IDLE_LIMIT = 600.0

#: ``exceptions`` option → debugpy's exception breakpoint filters. The notebook's code never
#: has an uncaught exception in debugpy's sense (IPython catches everything a cell raises), so
#: "uncaught" is debugpy's "userUnhandled": an exception leaving the notebook's code.
EXCEPTION_FILTERS = {"none": [], "raised": ["raised"], "uncaught": ["userUnhandled"]}

MOVES = {"continue": "continue", "step_over": "next", "step_into": "stepIn", "step_out": "stepOut"}


class SessionEnded(ToolError):
    """The session is over (kernel gone or restarted, debugger turned off); it was cleaned up."""


def short_value(value: str) -> dict[str, Any]:
    """``{"value"}`` cut to :data:`VALUE_LIMIT` characters, with ``valueLength`` when cut."""
    text, was_cut = cut(value, VALUE_LIMIT)
    return {"value": text, "valueLength": len(value)} if was_cut else {"value": text}


class DebugSession:
    """The agent's debug session on the kernel of one notebook (see the module docstring)."""

    def __init__(self, ctx: ToolContext, path: Path, shown: str, kernel: NotebookKernel) -> None:
        self.ctx = ctx
        self.path = path
        self.shown = shown
        self.kernel = kernel
        self.shared = False
        self.exceptions = "none"
        self.ended: str | None = None
        self.client: Any = None
        self._incarnation: Any = None
        self._seq = 0
        self._request_lock = asyncio.Lock()
        #: One action at a time changes what runs (run, moves, stop); inspecting may overlap.
        self.action_lock = asyncio.Lock()
        self._reader: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        #: The last ``stopped`` event's body while the code is stopped, else None.
        self.stopped: dict[str, Any] | None = None
        self._stops = 0
        self._idles = 0
        self._frames: list[dict[str, Any]] | None = None
        self._main_thread: int | None = None
        #: A step that ran off the end of a cell stays armed in debugpy and stops the next code
        #: that runs, somewhere in the kernel's own code: that stop is resumed, not reported.
        self._stray_step = False
        self._moving = False
        #: The agent's cell run under the debugger (the latest one).
        self.run: Execution | None = None
        # Where each cell's code lives in the kernel, both ways.
        self._source_of_cell: dict[str, str] = {}
        self._cell_of_source: dict[str, str] = {}
        #: Breakpoints set in the kernel: source path → {line in the cell (1-based): verified}.
        self._set: dict[str, dict[int, bool]] = {}
        self._tmp_prefix: str | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._sync_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()
        #: When the agent last acted on the session (monotonic seconds).
        self.last_call = time.monotonic()
        self._watchdog: asyncio.Task[None] | None = None

    # ---------------------------------------------------------------------------------------
    # Starting and ending

    async def open(self, exceptions: str) -> None:
        """Connect, start or join the kernel's debugger, set breakpoints and exceptions."""
        manager = self.kernel.manager(self.ctx)
        self._incarnation = managers.incarnation(manager)
        # A client of its own: the kernel's replies to it go to it alone (see new_client).
        self.client = managers.new_client(manager, own_session=True)
        try:
            try:
                await managers.connect(self.client)
            except Exception as e:
                raise ToolError(
                    f"The kernel of {self.shown} does not answer: {managers.describe(e)}"
                ) from e
            msg_id = self.client.kernel_info()
            reply = await self._shell_reply(msg_id, REQUEST_TIMEOUT)
            if not await self._has_debugger(manager, reply["content"]):
                name = reply["content"].get("implementation", "this kernel")
                raise ToolError(
                    f"The kernel of {self.shown} ({name}) has no debugger (its kernelspec does "
                    "not say it has one); ipykernel 6 or later with debugpy installed in the "
                    "kernel's environment has one, and so does xeus-python"
                )
            self._reader = asyncio.create_task(self._read_iopub())
            self._watchdog = asyncio.create_task(self._watch_idle())
            info = await self.request("debugInfo")
            self._tmp_prefix = info.get("tmpFilePrefix")
            if info.get("isStarted"):
                self.shared = True
                stopped = info.get("stoppedThreads") or []
                if stopped:
                    self.stopped = {"threadId": stopped[0], "reason": "pause"}
            else:
                await self.request(
                    "initialize",
                    clientID="jupyter-mcp",
                    clientName="jupyter-mcp",
                    adapterID="python",
                    pathFormat="path",
                    linesStartAt1=True,
                    columnsStartAt1=True,
                    supportsVariableType=True,
                    supportsVariablePaging=True,
                )
                # Functions and classes among the variables, not in groups of their own.
                presentation = {"special": "group", "function": "inline", "class": "inline"}
                await self.request(
                    "attach", timeout=ATTACH_TIMEOUT, variablePresentation=presentation
                )
                await self.request("configurationDone")
            await self.set_exceptions(exceptions)
            await self.sync_breakpoints()
            self._unsubscribe = self.ctx.services.breakpoints.subscribe(self._breakpoints_changed)
        except BaseException:
            await self._release()
            raise

    async def _has_debugger(self, manager: Any, info: dict[str, Any]) -> bool:
        """Whether the kernel has a debugger: its kernelspec's metadata says so (where
        JupyterLab looks, and ipykernel 6 says it), else its ``kernel_info`` does (the older
        ``debugger`` flag, or protocol 5.5's ``supported_features``).

        ipykernel 7 lists "debugger" among the ``supported_features`` of every kernel built
        on its Kernel class when debugpy is installed, wrapper kernels without a debugger
        (bash_kernel) too, so that list is believed of ipykernel's own kernel only."""
        try:
            specs = await managers.kernel_specs(self.ctx.serverapp)
        except ToolError:
            specs = {}
        metadata = managers.spec_of(specs, manager.kernel_name).get("metadata") or {}
        if isinstance(metadata, dict) and "debugger" in metadata:
            return bool(metadata["debugger"])
        if info.get("debugger"):
            return True
        features = info.get("supported_features") or []
        return "debugger" in features and info.get("implementation") == "ipython"

    async def close(self, reason: str = "the session was stopped") -> dict[str, Any]:
        """End the session: nothing of the agent's stays paused; the user's debugger stays on."""
        resumed = False
        run = self.run if self._ours_running() else None
        try:
            if not self.shared:
                for source in list(self._set):
                    await self.request("setBreakpoints", source={"path": source}, breakpoints=[])
            if self.exceptions != "none":
                await self.request("setExceptionBreakpoints", filters=[])
            if self.stopped is not None and (not self.shared or self._ours_running()):
                stops = self._stops
                await self.request("continue", threadId=self.stopped["threadId"])
                self._resumed(stops)
                resumed = True
            if not self.shared:
                await self.request("disconnect", restart=False, terminateDebuggee=False)
            # A shared debugger keeps the user's breakpoints, which may stop the agent's cell
            # again: it is let go on until it finishes (or the wait is over).
            deadline = time.monotonic() + STOP_WAIT
            while self._ours_running() and time.monotonic() < deadline:
                if self.shared and self.stopped is not None:
                    stops = self._stops
                    await self.request("continue", threadId=self.stopped["threadId"])
                    self._resumed(stops)
                changed = self._changed
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), ALIVE_POLL)
        except ToolError:
            pass  # the session ends anyway; the kernel's own state is reset by disconnect
        answer: dict[str, Any] = {"session": "ended", "resumed": resumed}
        if self.shared:
            answer["message"] = "JupyterLab's debugger stays on for this kernel"
        if run is not None:
            answer["run"] = self._run_answer(run)
        await self._end(reason)
        return answer

    async def _end(self, reason: str) -> None:
        if self.ended is None:
            self.ended = reason
        await self._release()
        self._notify()

    async def _release(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        tasks = [t for t in (self._reader, self._watchdog) if t is not None]
        tasks += list(self._tasks)
        current = asyncio.current_task()
        for task in tasks:
            if task is not current:
                task.cancel()
        for task in tasks:
            if task is not current:
                with contextlib.suppress(BaseException):
                    await task
        if self.client is not None:
            managers.disconnect(self.client)

    async def _watch_idle(self) -> None:
        while True:
            await asyncio.sleep(min(IDLE_LIMIT / 4, 5.0))
            idle = time.monotonic() - self.last_call
            if self.stopped is not None and self._ours_running() and idle > IDLE_LIMIT:
                log.warning(
                    "Ending the debug session on %s: stopped with no call for %.0f s",
                    self.shown,
                    idle,
                )
                self._watchdog = None  # this task ends the session: it must not cancel itself
                async with self.action_lock:
                    await self.close(f"it stayed stopped with no call for {IDLE_LIMIT:g} s")
                return

    async def check(self) -> None:
        """Raise :class:`SessionEnded` (after cleaning up) when the kernel is not the one the
        session started on any more."""
        if self.ended is not None:
            raise SessionEnded(f"The debug session on {self.shown} ended: {self.ended}")
        reason = await self._kernel_gone()
        if reason is not None:
            await self._end(reason)
            raise SessionEnded(f"The debug session on {self.shown} ended: {reason}")

    async def _kernel_gone(self) -> str | None:
        try:
            manager = managers.kernel(self.ctx.serverapp, self.kernel.kernel_id)
        except KeyError:
            return "the kernel was shut down"
        if managers.incarnation(manager) != self._incarnation:
            return "the kernel restarted"
        if managers.connection_lost(self.client):
            return "the kernel restarted or its connection closed"
        alive = await managers.is_alive(manager)
        return None if alive else "the kernel stopped (it died or was restarted)"

    # ---------------------------------------------------------------------------------------
    # The wire

    async def request(
        self, command: str, *, timeout: float = REQUEST_TIMEOUT, **arguments: Any
    ) -> dict[str, Any]:
        """Send one debugger request and answer the body of its reply (ToolError on failure)."""
        async with self._request_lock:
            if self.ended is not None:
                raise SessionEnded(f"The debug session on {self.shown} ended: {self.ended}")
            self._seq += 1
            content = {"type": "request", "seq": self._seq, "command": command}
            content["arguments"] = arguments
            msg = self.client.session.msg("debug_request", content)
            self.client.control_channel.send(msg)
            deadline = time.monotonic() + timeout
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                try:
                    reply = await self.client.control_channel.get_msg(
                        timeout=min(remaining, ALIVE_POLL)
                    )
                except queue.Empty:
                    gone = await self._kernel_gone()
                    if gone is not None:
                        self._spawn(self._end(gone))
                        raise SessionEnded(
                            f"The debug session on {self.shown} ended: {gone}"
                        ) from None
                    continue
                if reply.get("parent_header", {}).get("msg_id") == msg["header"]["msg_id"]:
                    timed_out = False
                    break
        if timed_out:
            self._spawn(self._end(f"the kernel's debugger did not answer {command!r}"))
            raise SessionEnded(
                f"The kernel's debugger did not answer {command!r} within {timeout:g} s; the "
                f"debug session on {self.shown} was ended (the kernel keeps running)"
            )
        body: dict[str, Any] = reply.get("content") or {}
        if not body:
            # ipykernel answers nothing to requests while its debugger is off.
            self._spawn(self._end("the kernel's debugger was turned off"))
            raise SessionEnded(
                f"The kernel's debugger is off (turned off in JupyterLab, or the kernel "
                f"restarted); the debug session on {self.shown} ended"
            )
        if not body.get("success", False):
            message = body.get("message") or "no reason given"
            raise ToolError(f"The kernel's debugger refused {command}: {message}")
        result: dict[str, Any] = body.get("body") or {}
        return result

    async def _shell_reply(self, msg_id: str, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ToolError(f"The kernel of {self.shown} did not answer in time")
            try:
                reply: dict[str, Any] = await self.client.get_shell_msg(timeout=remaining)
            except queue.Empty:
                continue
            if reply.get("parent_header", {}).get("msg_id") == msg_id:
                return reply

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def _read_iopub(self) -> None:
        while True:
            try:
                msg = await self.client.get_iopub_msg(timeout=ALIVE_POLL)
            except queue.Empty:
                continue
            kind = msg.get("msg_type")
            content = msg.get("content") or {}
            parent = msg.get("parent_header") or {}
            if kind == "debug_event":
                self._on_event(content)
            elif kind == "status" and parent.get("msg_type") == "execute_request":
                if content.get("execution_state") == "idle":
                    self._idles += 1
                    self._notify()

    def _on_event(self, event: dict[str, Any]) -> None:
        name = event.get("event")
        body = event.get("body") or {}
        if name == "stopped":
            if self._stray_step and not self._moving and body.get("reason") == "step":
                self._stray_step = False
                self._spawn(self._resume_stray(body.get("threadId")))
                return
            self._stray_step = False
            self.stopped = body
            self._frames = None
            self._stops += 1
            if body.get("threadId") is not None:
                self._main_thread = body["threadId"]
            self._notify()
        elif name == "continued":
            self.stopped = None
            self._frames = None
            self._notify()

    async def _resume_stray(self, thread_id: Any) -> None:
        with contextlib.suppress(ToolError):
            await self.request("continue", threadId=thread_id)

    # ---------------------------------------------------------------------------------------
    # The notebook and its breakpoints

    async def notebook(self) -> tuple[NotebookNode, str]:
        """The notebook as it is now (live when open) and its percent-format view."""
        documents = self.ctx.services.notebooks
        if documents is not None:
            import nbformat

            document = await documents.open(self.path, self.shown)
            nb = nbformat.from_dict(await document.snapshot())
            return nb, await asyncio.to_thread(view_of_notebook, nb)
        return await asyncio.to_thread(read_notebook_and_view, self.ctx, self.path, self.shown)

    async def dump(self, cell_id: str, source: str) -> str:
        """The file the kernel compiles ``source`` under (written by the kernel)."""
        path = (await self.request("dumpCell", code=source))["sourcePath"]
        self._source_of_cell[cell_id] = path
        self._cell_of_source[path] = cell_id
        return str(path)

    async def sync_breakpoints(self) -> None:
        """Make the kernel's breakpoints those of the server: in this notebook's cells, and in
        the project's Python files (modules the notebook imports)."""
        async with self._sync_lock:
            nb, view = await self.notebook()
            lines: set[int] = set()
            wanted: dict[str, list[int]] = {}
            for e in self.ctx.services.breakpoints.list():
                if e["path"] == str(self.path):
                    lines.add(e["line"])
                elif e["path"].endswith(".py"):
                    wanted.setdefault(e["path"], []).append(e["line"])
            by_id = {c.get("id"): c for c in nb.cells}
            for entry in view_lines_by_cell(nb, lines, view):
                cell = by_id.get(entry["id"])
                if cell is None or cell.cell_type != "code":
                    continue
                source = await self.dump(entry["id"], cell.source)
                wanted[source] = entry["lines"]
            for source in list(self._set):
                if source not in wanted:
                    await self.request("setBreakpoints", source={"path": source}, breakpoints=[])
                    del self._set[source]
            for source, cell_lines in wanted.items():
                body = await self.request(
                    "setBreakpoints",
                    source={"path": source},
                    breakpoints=[{"line": n} for n in cell_lines],
                    sourceModified=False,
                )
                answered = body.get("breakpoints") or []
                self._set[source] = {
                    n: bool(answered[i].get("verified")) if i < len(answered) else False
                    for i, n in enumerate(cell_lines)
                }

    def _breakpoints_changed(self, change: dict[str, Any]) -> None:
        path = str(change.get("path"))
        if (path == str(self.path) or path.endswith(".py")) and self.ended is None:
            self._spawn(self._sync_quietly())

    async def _sync_quietly(self) -> None:
        try:
            await self.sync_breakpoints()
        except ToolError as e:
            log.warning("Setting breakpoints of %s in its kernel failed: %s", self.shown, e)

    async def set_exceptions(self, exceptions: str) -> None:
        """Stop on raised / uncaught exceptions, or not ("none")."""
        if exceptions != self.exceptions:
            await self.request("setExceptionBreakpoints", filters=EXCEPTION_FILTERS[exceptions])
        self.exceptions = exceptions

    async def breakpoints(self) -> list[dict[str, Any]]:
        """The breakpoints set in the kernel, by cell, with whether the debugger verified them."""
        nb, view = await self.notebook()
        markers = cell_marker_lines(nb, view) or []
        index_of = {c.get("id"): i for i, c in enumerate(nb.cells)}
        found = []
        for source, lines in self._set.items():
            cell_id = self._cell_of_source.get(source)
            index = index_of.get(cell_id)
            for line, verified in sorted(lines.items()):
                entry: dict[str, Any]
                if cell_id is None:  # a project file
                    entry = {"file": self.ctx.relative(Path(source)), "fileLine": line}
                else:
                    entry = {"cellId": cell_id, "line": line - 1}
                    if index is not None and index < len(markers):
                        entry["viewLine"] = markers[index] + line
                entry["verified"] = verified
                found.append(entry)
        return found

    # ---------------------------------------------------------------------------------------
    # Running a cell

    def _ours_running(self) -> bool:
        return self.run is not None and not self.run.done

    async def run_cell(self, cell: Any, timeout: float) -> dict[str, Any]:
        """Execute ``cell`` under the debugger; answer when it stops, finishes or times out."""
        if self._ours_running():
            assert self.run is not None
            raise ToolError(
                f"Cell {self.run.steps[0].cell_id} is still running under the debugger"
                + (" (stopped)" if self.stopped else "")
                + "; continue, step, pause or stop the session first"
            )
        if self.stopped is not None:
            raise ToolError(
                "The kernel is stopped in code the agent did not start (JupyterLab's debugger); "
                "it cannot run a cell until that code continues"
            )
        await self.sync_breakpoints()
        await self.dump(cell.id, cell.source)
        documents = self.ctx.services.notebooks
        document = await documents.open(self.path, self.shown) if documents else None
        stops, idles = self._stops, self._idles
        # Paused at a breakpoint is not a hung cell: the run's own deadline is the longest.
        run = self.ctx.services.executions.start(
            self.kernel,
            self.shown,
            [Step(cell.id, cell.source)],
            document=document,
            timeout_ms=MAX_TIMEOUT_MS,
            reporter=None,
        )
        self.run = run
        self._spawn(self._when_done(run))
        return await self.settle(run, stops, idles, timeout, what="run_cell")

    async def _when_done(self, run: Execution) -> None:
        await run.wait()
        # The run's reply and the debugger's "continued" event come on different channels: a
        # cell that finished is not stopped, whichever arrives first.
        self.stopped = None
        self._frames = None
        self._notify()

    def _resumed(self, stops: int) -> None:
        """The debugger answered a move: the code runs, unless it already stopped again (the
        "stopped" event may overtake the reply)."""
        if self._stops == stops:
            self.stopped = None
            self._frames = None

    # ---------------------------------------------------------------------------------------
    # Waiting, moving

    async def settle(
        self, run: Execution | None, stops: int, idles: int, timeout: float, *, what: str
    ) -> dict[str, Any]:
        """Wait until the code stops again, ``run`` (or, without one, any execution) finishes,
        or ``timeout`` passes."""
        deadline = time.monotonic() + timeout
        while True:
            if self._stops > stops and self.stopped is not None:
                thread = self.stopped["threadId"]
                found = await self.stopped_answer()
                if not self._library_exception(found["where"]):
                    return found
                # Libraries the kernel itself uses raise and catch exceptions of their own
                # (formatting a traceback does): not the notebook's, so not a place to stop.
                stops = self._stops
                await self.request("continue", threadId=thread)
                continue
            if run is not None and run.done:
                return self._run_answer(run)
            if run is None and self._idles > idles:
                return {"state": "finished"}
            if self.ended is not None:
                raise SessionEnded(f"The debug session on {self.shown} ended: {self.ended}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            changed = self._changed
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), min(remaining, ALIVE_POLL))
            except asyncio.CancelledError:
                # The caller gave up (a cancelled call or task): the agent's code that runs on
                # is stopped as a cancelled execute_notebook_cells is, the kernel interrupted.
                if run is not None and not run.done and self.stopped is None:
                    await asyncio.shield(run.stop("interrupted"))
                raise
        if what in ("run_cell", "continue"):
            answer: dict[str, Any] = self._run_answer(run) if run else {"state": "running"}
            answer["message"] = (
                f"Still running after {timeout:g} s (no breakpoint reached); 'state' or "
                "'continue' waits again, 'pause' stops it where it is, 'stop' ends the session"
            )
            return answer
        raise ToolError(
            f"{what} did not stop within {timeout:g} s: the code is still running (a long loop "
            "or call). The session is still on: 'pause' stops it where it is, 'continue' lets "
            "it run, 'stop' ends the session"
        )

    def _library_exception(self, where: dict[str, Any]) -> bool:
        """A stop on an exception in code outside the notebook and the project."""
        file = where.get("file")
        return where.get("reason") == "exception" and file is not None and Path(file).is_absolute()

    async def move(self, action: str, timeout: float) -> dict[str, Any]:
        """continue / step_over / step_into / step_out from where the code is stopped."""
        if self.stopped is None:
            if action == "continue" and self._ours_running():
                return await self.settle(self.run, self._stops, self._idles, timeout, what=action)
            raise ToolError(
                f"Nothing is stopped, so there is nothing to {action.replace('_', ' ')}"
            )
        thread = self.stopped["threadId"]
        run = self.run if self._ours_running() else None
        stops, idles = self._stops, self._idles
        self._moving = True
        try:
            await self.request(MOVES[action], threadId=thread)
            self._resumed(stops)
            answer = await self.settle(run, stops, idles, timeout, what=action)
        finally:
            self._moving = False
        if action != "continue" and answer["state"] == "finished":
            self._stray_step = True
        return answer

    async def pause(self, timeout: float) -> dict[str, Any]:
        """Stop the running code where it is."""
        if self.stopped is not None:
            return await self.stopped_answer()
        if not self._ours_running():
            raise ToolError("No cell is running under the debugger, so there is nothing to pause")
        thread = self._main_thread
        if thread is None:
            threads = (await self.request("threads")).get("threads") or []
            main = [t["id"] for t in threads if t.get("name") == "MainThread"]
            thread = main[0] if main else (threads[0]["id"] if threads else 1)
        stops, idles = self._stops, self._idles
        self._moving = True
        try:
            await self.request("pause", threadId=thread)
            return await self.settle(self.run, stops, idles, timeout, what="pause")
        finally:
            self._moving = False

    # ---------------------------------------------------------------------------------------
    # Answers

    @staticmethod
    def _run_answer(run: Execution) -> dict[str, Any]:
        """The cell run as run_cell answers it: running, or finished with its outputs."""
        value = run.answer()
        cell = value["cells"][0] if value["cells"] else {"cellId": run.steps[0].cell_id}
        answer: dict[str, Any] = {"state": "finished" if run.done else "running", **cell}
        if not run.done:
            answer.pop("status", None)
            answer.pop("executionCount", None)
        answer["executionId"] = value["executionId"]
        for key in ("error", "notebookError"):
            if key in value:
                answer[key] = value[key]
        return answer

    async def frames(self) -> list[dict[str, Any]]:
        """The stack of the stopped thread (debugpy's frames), innermost first."""
        if self.stopped is None:
            raise ToolError("The code is not stopped; run_cell stops it at a breakpoint")
        if self._frames is None:
            body = await self.request("stackTrace", threadId=self.stopped["threadId"])
            self._frames = body.get("stackFrames") or []
        return self._frames

    async def locate(self, source: str | None, line: int) -> dict[str, Any]:
        """Where a frame is: a cell of the notebook (id, 0-based line, view line, the code) or a
        file."""
        where: dict[str, Any] = {}
        if source and source not in self._cell_of_source and self._tmp_prefix:
            if source.startswith(self._tmp_prefix):
                await self._dump_all()
        cell_id = self._cell_of_source.get(source or "")
        if cell_id is not None:
            nb, view = await self.notebook()
            markers = cell_marker_lines(nb, view) or []
            for index, cell in enumerate(nb.cells):
                if cell.get("id") == cell_id:
                    where["cellId"] = cell_id
                    where["line"] = line - 1
                    if index < len(markers):
                        where["viewLine"] = markers[index] + line
                    lines = cell.source.splitlines()
                    if 0 < line <= len(lines):
                        where["code"] = lines[line - 1]
                    return where
            where["cellId"] = cell_id  # the cell was deleted since
            where["line"] = line - 1
            return where
        if source:
            file = Path(source)
            inside = file.is_absolute() and is_inside(self.ctx.root_dir, file)
            where["file"] = self.ctx.relative(file) if inside else source
        where["fileLine"] = line
        return where

    async def _dump_all(self) -> None:
        nb, _ = await self.notebook()
        for cell in nb.cells:
            if cell.cell_type == "code" and cell.get("id") not in self._source_of_cell:
                await self.dump(cell.id, cell.source)

    async def frame_answer(self, frame: dict[str, Any]) -> dict[str, Any]:
        """One frame as the agent gets it."""
        where = await self.locate((frame.get("source") or {}).get("path"), frame.get("line", 0))
        return {"frameId": frame["id"], "function": frame.get("name"), **where}

    async def stopped_answer(self) -> dict[str, Any]:
        """``{"state": "stopped", "where", …}`` for where the code is stopped now."""
        stopped = self.stopped
        assert stopped is not None
        frames = await self.frames()
        where: dict[str, Any] = {}
        if frames:
            top = await self.frame_answer(frames[0])
            top.pop("frameId")
            where.update(top)
        reason = stopped.get("reason", "pause")
        where["reason"] = reason
        if reason == "exception":
            where["exception"] = stopped.get("text") or ""
            if stopped.get("description"):
                where["exceptionMessage"] = stopped["description"]
        answer: dict[str, Any] = {"state": "stopped", "where": where}
        if frames:
            answer["frameId"] = frames[0]["id"]
        run = self.run
        if run is not None and not run.done:
            printed = self._run_answer(run)
            answer["cellId"] = printed["cellId"]
            answer["executionId"] = printed["executionId"]
            answer["outputs"] = printed.get("outputs", [])
        return answer

    async def frame_id(self, frame_id: int | None) -> int:
        """``frame_id``, checked against the current stack, or the innermost frame's."""
        frames = await self.frames()
        if not frames:
            raise ToolError("The stopped code has no frames to inspect")
        if frame_id is None:
            return int(frames[0]["id"])
        if frame_id not in {f["id"] for f in frames}:
            known = ", ".join(str(f["id"]) for f in frames[:20])
            raise ToolError(
                f"No frame {frame_id} in the current stack (frames: {known}); frame ids change "
                "every time the code moves — ask 'stack' again"
            )
        return frame_id

    async def variables(
        self, frame_id: int | None, reference: int | None, start: int, count: int
    ) -> dict[str, Any]:
        """Scopes of a frame with its first scope's variables, or the children of a reference."""
        if self.stopped is None:
            raise ToolError("The code is not stopped; variables are read from a stopped frame")
        answer: dict[str, Any] = {}
        if reference is None:
            fid = await self.frame_id(frame_id)
            scopes = (await self.request("scopes", frameId=fid)).get("scopes") or []
            answer["frameId"] = fid
            answer["scopes"] = [
                {"name": s.get("name"), "variablesReference": s.get("variablesReference")}
                for s in scopes
            ]
            if not scopes:
                return answer
            reference = int(scopes[0]["variablesReference"])
            answer["scope"] = scopes[0].get("name")
        body = await self.request("variables", variablesReference=reference)
        children = body.get("variables") or []
        page = children[start : start + count]
        answer.update(
            variablesReference=reference,
            start=start,
            total=len(children),
            more=start + len(page) < len(children),
            variables=[self._variable(v) for v in page],
        )
        return answer

    @staticmethod
    def _variable(v: dict[str, Any]) -> dict[str, Any]:
        item: dict[str, Any] = {"name": v.get("name"), "type": v.get("type", "")}
        item.update(short_value(str(v.get("value", ""))))
        if v.get("variablesReference"):
            item["variablesReference"] = v["variablesReference"]
        return item

    async def evaluate(self, expression: str, frame_id: int | None) -> dict[str, Any]:
        """``expression`` evaluated in a frame of the stopped code."""
        fid = await self.frame_id(frame_id)
        body = await self.request("evaluate", expression=expression, frameId=fid, context="repl")
        answer: dict[str, Any] = {"frameId": fid, "type": body.get("type", "")}
        text, was_cut = cut(str(body.get("result", "")), VALUE_LIMIT * 4)
        answer["result"] = text
        if was_cut:
            answer["resultLength"] = len(str(body.get("result", "")))
        if body.get("variablesReference"):
            answer["variablesReference"] = body["variablesReference"]
        return answer

    async def state(self) -> dict[str, Any]:
        """Whether code runs or is stopped (and where), the breakpoints and their verification."""
        info = await self.request("debugInfo")
        if not info.get("isStarted"):
            await self._end("the kernel's debugger was turned off")
            raise SessionEnded(
                f"The debug session on {self.shown} ended: the kernel's debugger was turned off"
            )
        answer: dict[str, Any] = {
            "session": "on",
            "kernelId": self.kernel.kernel_id,
            "shared": self.shared,
            "exceptions": self.exceptions,
            "running": self._ours_running() and self.stopped is None,
        }
        if self.stopped is not None:
            answer.update(await self.stopped_answer())
        elif self.run is not None:
            answer.update(self._run_answer(self.run))
        answer["breakpoints"] = await self.breakpoints()
        return answer


class KernelDebuggers:
    """The agent's debug sessions, one per notebook, on the server's kernels."""

    def __init__(self) -> None:
        self._sessions: dict[Path, DebugSession] = {}
        self._last_end: dict[Path, str] = {}
        self._starting: dict[Path, asyncio.Lock] = {}

    def get(self, path: Path) -> DebugSession | None:
        """The live session of a notebook (marked as used now), or None."""
        session = self._sessions.get(path)
        if session is not None and session.ended is not None:
            self._forget(session)
            return None
        if session is not None:
            session.last_call = time.monotonic()
        return session

    def _forget(self, session: DebugSession) -> None:
        if self._sessions.get(session.path) is session:
            del self._sessions[session.path]
            self._last_end[session.path] = session.ended or "ended"

    async def session(self, path: Path, shown: str) -> DebugSession:
        """The notebook's session, checked alive; a clear error when there is none."""
        session = self.get(path)
        if session is None:
            why = self._last_end.get(path)
            raise ToolError(
                f"No debug session on {shown}"
                + (f" (the last one ended: {why})" if why else "")
                + "; start one with action 'start'"
            )
        try:
            await session.check()
        except SessionEnded:
            self._forget(session)
            raise
        return session

    async def state(self, path: Path, shown: str) -> dict[str, Any]:
        """The notebook's session state; ``{"session": "off"}`` (and why) when there is none."""
        session = self.get(path)
        if session is not None:
            try:
                await session.check()
                return await session.state()
            except SessionEnded:
                self._forget(session)
        answer: dict[str, Any] = {"session": "off"}
        if path in self._last_end:
            answer["ended"] = self._last_end[path]
        return answer

    async def start(
        self, ctx: ToolContext, path: Path, shown: str, exceptions: str | None
    ) -> dict[str, Any]:
        """Start (or join) the debugger of the notebook's kernel; idempotent."""
        lock = self._starting.setdefault(path, asyncio.Lock())
        async with lock:
            session = self.get(path)
            if session is not None:
                try:
                    await session.check()
                except SessionEnded:
                    self._forget(session)
                    session = None
            if session is not None:
                if exceptions is not None:
                    await session.set_exceptions(exceptions)
                answer = await session.state()
                answer["alreadyStarted"] = True
                return answer
            kernel = await notebook_kernel(ctx, path)
            session = DebugSession(ctx, path, shown, kernel)
            await session.open(exceptions or "none")
            self._sessions[path] = session
            answer = await session.state()
            if session.shared:
                answer["message"] = (
                    "JupyterLab's debugger is already on for this kernel (the user is debugging): "
                    "this session shares its state, so the user sees where the agent stops, and "
                    "'stop' leaves the user's debugger on"
                )
            return answer

    async def stop(self, ctx: ToolContext, path: Path, shown: str) -> dict[str, Any]:
        """End the notebook's session (nothing stays paused)."""
        session = self.get(path)
        if session is None:
            raise ToolError(f"No debug session on {shown}; nothing to stop")
        async with session.action_lock:
            try:
                answer = await session.close()
            finally:
                self._forget(session)
        return answer

    async def shutdown(self) -> None:
        """End every session (the server stops): resume what is paused, turn debuggers off."""
        for session in list(self._sessions.values()):
            try:
                if session.ended is None:
                    await session.close()
            except Exception:
                log.exception("Ending the debug session on %s failed", session.shown)
            self._forget(session)
