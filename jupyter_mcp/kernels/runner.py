"""Running a notebook's cells (or a snippet) in its kernel, as a user's run would.

An :class:`Execution` runs its cells one after the other on the kernel's kept client
(:mod:`jupyter_mcp.kernels.clients`) and stops at the first cell that raises. Each cell is a
user-visible run: the execution count advances and the history keeps it, and the notebook
document is told as it goes (``[*]``, each output as it arrives, then the count), so the user
watching the notebook sees the run happen. The agent's copy of the outputs is kept beside it
and answered as output objects.

An execution always runs in a task of its own. A caller that waits for it and is cancelled
stops it (the kernel is interrupted and the cells that ran are kept); its deadline
(``timeoutMs``) interrupts it too. A background run is followed up by its id. A kernel that
dies mid-run ends the execution with what it had and the kernel's client is dropped, so the
next run connects to the restarted (or a new) kernel.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import nbformat

from ..core.context import current_principal, running_task
from ..core.errors import ToolError
from ..core.registry import Image
from ..documents.notebook_document import NotebookDocument
from ..documents.running_cell import RunningCell
from . import managers
from .clients import KernelClient, KernelClients
from .execute import KernelDied, execute
from .outputs import images_of, output_object, readable_text, storable
from .sessions import NotebookKernel

#: ``reporter(progress, total, message)``: the MCP progress of the call that waits.
Reporter = Callable[[float, "float | None", "str | None"], None]

#: Default and largest ``timeoutMs`` of a run (milliseconds).
DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 24 * 3600 * 1000
#: Longest ``waitMs`` of a follow-up (milliseconds).
MAX_WAIT_MS = 300_000
#: Seconds an interrupted kernel has to end the running cell before the run stops waiting.
INTERRUPT_GRACE = 10.0
#: Finished executions kept for follow-ups (the oldest are forgotten first).
KEEP_FINISHED = 64
#: Output objects one cell answers (its first and last ones; the notebook keeps them all).
MAX_OUTPUTS = 100
#: Pictures one answer attaches.
MAX_IMAGES = 10
#: Seconds between progress notifications while a cell is silent.
PROGRESS_TICK = 1.0
#: Seconds between two progress notifications caused by output.
PROGRESS_MIN_GAP = 0.2
#: Seconds between two looks at a kernel busy with another client's cell.
KERNEL_POLL = 0.05

_OUTPUT_KINDS = frozenset({"stream", "display_data", "execute_result", "error"})

STDIN_MESSAGE = (
    "Cell {cell} asked for input (input() or getpass): code run by the agent has no stdin, "
    "so the kernel refused it at once. Put the value in the code instead."
)


@dataclass
class Step:
    """One piece of code to run: a notebook cell (its id) or a snippet (no id)."""

    cell_id: str | None
    source: str


@dataclass
class CellRun:
    """What one step did: its outputs as the kernel sent them, its count and its status."""

    cell_id: str | None
    outputs: RunningCell
    execution_count: int | None = None
    #: "running", "ok", "error", "timeout", "interrupted" or "died".
    status: str = "running"

    def output_objects(self) -> dict[str, Any]:
        """The outputs as output objects; a cell with very many keeps its first and last."""
        answer, outputs = self._kept_outputs()
        answer["outputs"] = [output_object(o) for o in outputs]
        return answer

    def raw_outputs(self) -> dict[str, Any]:
        """The same outputs as the kernel sent them (rich data included), for a view."""
        answer, outputs = self._kept_outputs()
        answer["outputs"] = outputs
        return answer

    def _kept_outputs(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        outputs = self.outputs.outputs
        answer: dict[str, Any] = {}
        if len(outputs) > MAX_OUTPUTS:
            half = MAX_OUTPUTS // 2
            answer["outputsOmitted"] = len(outputs) - MAX_OUTPUTS
            outputs = outputs[:half] + outputs[-half:]
        return answer, outputs


def select_cells(
    nb: Mapping[str, Any],
    shown: str,
    cell_ids: list[str] | None,
    from_index: int | None,
    to_index: int | None,
) -> list[dict[str, Any]]:
    """The code cells to run, in notebook order: those named, those of the range, or all."""
    cells: list[dict[str, Any]] = list(nb.get("cells") or [])
    if cell_ids is not None:
        if from_index is not None or to_index is not None:
            raise ToolError("Give either cellIds or fromIndex/toIndex, not both")
        if not cell_ids:
            raise ToolError("cellIds is empty: name at least one cell")
        known = {c.get("id") for c in cells}
        unknown = [i for i in cell_ids if i not in known]
        if unknown:
            raise ToolError(
                f"No cell with id {', '.join(map(repr, unknown))} in {shown} "
                "(get_notebook_cells lists the ids)"
            )
        wanted = set(cell_ids)
        chosen = [c for c in cells if c.get("id") in wanted]
        not_code = [c["id"] for c in chosen if c.get("cell_type") != "code"]
        if not_code:
            raise ToolError(
                f"Only code cells run; {', '.join(map(repr, not_code))} in {shown} "
                "are markdown or raw cells. Nothing was run"
            )
        return chosen
    count = len(cells)
    start = 0 if from_index is None else from_index
    end = count - 1 if to_index is None else to_index
    for label, value in (("fromIndex", from_index), ("toIndex", to_index)):
        if value is not None and not 0 <= value < count:
            raise ToolError(
                f"{label} {value} is out of range: {shown} has {count} cells"
                + (f" (0 to {count - 1})" if count else "")
            )
    if start > end:
        raise ToolError(f"fromIndex {start} is after toIndex {end}")
    chosen = [c for c in cells[start : end + 1] if c.get("cell_type") == "code"]
    if not chosen:
        where = "" if from_index is None and to_index is None else f" cells {start} to {end} of"
        raise ToolError(f"There are no code cells in{where} {shown}; nothing was run")
    return chosen


def _last_line(output: Mapping[str, Any]) -> str | None:
    """The last line a person would read in ``output``, for progress messages."""
    kind = output.get("output_type")
    if kind == "stream":
        text = output.get("text", "")
    elif kind == "error":
        text = f"{output.get('ename', '')}: {output.get('evalue', '')}"
    else:
        text = (output.get("data") or {}).get("text/plain", "")
    if isinstance(text, list):
        text = "".join(text)
    lines = [line for line in readable_text(str(text)).splitlines() if line.strip()]
    return lines[-1][:200] if lines else None


@dataclass(eq=False)
class Execution:
    """One run of cells (or of a snippet) in a notebook's kernel."""

    id: str
    #: The notebook as tools name it to the agent.
    shown: str
    kernel: NotebookKernel
    steps: list[Step]
    #: Where cells report their run; None for a snippet (the notebook is not changed).
    document: NotebookDocument | None
    clients: KernelClients
    log: logging.Logger
    timeout: float
    #: Who started it (see ``current_principal``): only they find it by its id.
    principal: str | None = None
    runs: list[CellRun] = field(default_factory=list)
    #: "running", then "ok", "error", "timeout" or "interrupted".
    status: str = "running"
    #: Why it ended other than by a cell's own error (the kernel died, input() was refused …).
    error: str | None = None
    #: A problem reporting outputs into the notebook (the run itself went on).
    notebook_error: str | None = None
    #: Set when something asked it to stop: "timeout" or "interrupted".
    stop_reason: str | None = None
    started: float = field(default_factory=time.time)
    ended: float | None = None
    task: asyncio.Task[None] | None = None
    reporter: Reporter | None = None
    _last_line: str | None = None
    _last_report: float = 0.0
    _last_progress: float = 0.0
    _reported: bool = False
    _deferred: asyncio.TimerHandle | None = None
    _cell_started: float = field(default_factory=time.monotonic)
    _timer: asyncio.TimerHandle | None = None
    _stopper: asyncio.Task[None] | None = None
    #: True while a request of this execution is in the kernel (an interrupt would reach it).
    _in_kernel: bool = False
    #: True while the run waits for the kernel: for its client, or for another client's cell.
    _waiting: bool = False

    @property
    def done(self) -> bool:
        """True once the execution ended (any way)."""
        return self.status != "running"

    # -- running ------------------------------------------------------------------------------

    def begin(self) -> None:
        """Start the run in its own task, with its deadline.

        The task runs in (a copy of) the context of the call that started it: the run reports
        to the call's MCP task. The deadline does not: a timer keeps its context until it is
        dropped, and the call's context holds the call's handler and MCP session.
        """
        loop = asyncio.get_running_loop()
        self.task = loop.create_task(self._run(), name=f"jupyter_mcp execution {self.id}")
        self._timer = loop.call_later(self.timeout, self._time_out, context=contextvars.Context())

    def _time_out(self) -> None:
        if not self.done:
            self._stopper = asyncio.get_running_loop().create_task(self.stop("timeout"))

    async def _run(self) -> None:
        ticker = asyncio.get_running_loop().create_task(self._tick())
        try:
            # Connecting waits as well when the kernel is busy: it answers only between cells.
            self._waiting = True
            async with self.clients.use(self.kernel.kernel_id) as kept:
                self._waiting = False
                for step in self.steps:
                    if self.stop_reason is not None or not await self._run_step(kept, step):
                        break
                # After the cells, so that it takes nothing of their timeoutMs.
                if self.stop_reason is None:
                    await self._note_language(kept)
            if self.status == "running":
                self.status = self.stop_reason or "ok"
        except asyncio.CancelledError:
            # Only stop() cancels the task: before it reached the kernel, or the kernel
            # ignored the interrupt (stop() said so).
            self.status = self.stop_reason or "interrupted"
        except ToolError as e:
            self.status, self.error = "error", str(e)
        except Exception as e:  # a bug or a broken kernel connection: said, not raised
            self.log.exception("jupyter_mcp: execution %s failed", self.id)
            self.status, self.error = "error", f"The run failed: {type(e).__name__}: {e}"
        finally:
            ticker.cancel()
            self.ended = time.time()
            if self._timer is not None:
                self._timer.cancel()
            self._report(final=True)
            self._release()

    def _release(self) -> None:
        """Let go of what ties the ended run to the call that started it: its task (which
        keeps that call's context, with the call's handler and MCP session, for as long as
        it is referenced), its timers, the call's progress reporter and the notebook's
        document (a shared one holds its room open, lab/rooms.py: kept by a finished run, the
        room and its document's whole history would stay as long as the run is kept). The
        finished run is kept for follow-ups (:data:`KEEP_FINISHED`) with its outputs only."""
        if self._deferred is not None:
            self._deferred.cancel()
        self._deferred = self._timer = None
        self.reporter = None
        self.task = None
        self.document = None

    async def _run_step(self, kept: KernelClient, step: Step) -> bool:
        """Run one step; False when the execution stops after it."""
        run = CellRun(step.cell_id, RunningCell(step.cell_id or "code"))
        self.runs.append(run)
        self._cell_started = time.monotonic()
        await self._tell("run_started", step.cell_id)
        finished = False
        try:
            if not step.source.strip():
                # As JupyterLab does: an empty cell is not sent; it ends with no count.
                run.status = "ok"
                await self._tell("run_finished", step.cell_id, None)
                finished = True
                return True
            pending_clear = False

            async def on_message(kind: str, content: dict[str, Any]) -> None:
                nonlocal pending_clear
                if kind == "execute_input":
                    run.execution_count = content.get("execution_count")
                    return
                if kind == "clear_output":
                    if content.get("wait"):
                        pending_clear = True  # cleared when the next output arrives
                    else:
                        run.outputs.clear()
                        await self._tell("clear_output", step.cell_id)
                    return
                if kind not in _OUTPUT_KINDS:
                    return
                if pending_clear:
                    pending_clear = False
                    run.outputs.clear()
                    await self._tell("clear_output", step.cell_id)
                output = storable(
                    nbformat.v4.output_from_msg({"header": {"msg_type": kind}, "content": content})
                )
                run.outputs.add(output)
                await self._tell("output", step.cell_id, output)
                self._last_line = _last_line(output) or self._last_line
                self._report()

            await self._wait_until_free(kept)
            self._in_kernel = True
            try:
                reply = await execute(
                    kept.client,
                    step.source,
                    on_message=on_message,
                    is_alive=kept.is_alive,
                    store_history=step.cell_id is not None,
                )
            except KernelDied:
                closed = managers.connection_closed(kept.client)
                self.clients.drop(self.kernel.kernel_id)
                run.status, self.status = "died", "error"
                where = f"cell {step.cell_id}" if step.cell_id else "the code"
                if self.stop_reason is not None and not closed:
                    # Some kernels end on the interrupt instead of stopping the code (xeus
                    # kernels on SIGINT, jupyter-xeus/xeus#272): the run still stopped.
                    self.status = self.stop_reason
                    self.error = (
                        f"The kernel ended when it was interrupted ({self.stop_reason}) while "
                        f"running {where}, instead of stopping the code: this kernel cannot "
                        "be interrupted. The outputs it sent are kept; the next run uses the "
                        "restarted kernel, whose variables are gone"
                    )
                elif closed:
                    self.error = (
                        f"The connection to the kernel closed while running {where} (its "
                        "gateway shut it down or went away); the outputs it sent are kept"
                    )
                else:
                    self.error = (
                        f"The kernel died (or was restarted) while running {where}; the "
                        "outputs it sent are kept. The next run uses the restarted kernel, "
                        "whose variables are gone"
                    )
                task = running_task.get()
                if task is not None and task.task_id == self.id:
                    task.fail(self.error)  # the run answers, but its work did not get done
                return False
            finally:
                self._in_kernel = False
            content = reply.get("content", {})
            if step.cell_id is not None:
                run.execution_count = content.get("execution_count", run.execution_count)
            await self._tell("run_finished", step.cell_id, run.execution_count)
            finished = True
            if content.get("status") == "ok":
                run.status = "ok"
                return True
            ename = content.get("ename")
            if self.stop_reason is not None or ename == "KeyboardInterrupt":
                run.status = self.stop_reason or "interrupted"
                self.status = run.status
            else:
                run.status = self.status = "error"
                if ename == "StdinNotImplementedError":
                    self.error = STDIN_MESSAGE.format(cell=step.cell_id or "code")
            return False
        finally:
            if not finished:
                if run.status == "running":
                    run.status = self.stop_reason or "interrupted"
                with contextlib.suppress(Exception):
                    await self._tell("run_finished", step.cell_id, run.execution_count)

    async def _wait_until_free(self, kept: KernelClient) -> None:
        """Wait while the kernel runs another client's cell (the user's, say).

        A request sent now would queue behind it, and an interrupt (a timeout, a cancelled
        call) would then stop that cell, not ours; waiting first keeps the other's work safe.
        """
        self._waiting = True
        try:
            while await kept.busy_elsewhere():
                await asyncio.sleep(KERNEL_POLL)
        finally:
            self._waiting = False

    async def _note_language(self, kept: KernelClient) -> None:
        """Write the kernel's ``language_info`` into the notebook's metadata, as JupyterLab
        does when a kernel connects: what it says (name, version, file extension) is what
        nbconvert, jupytext and GitHub's renderer read a notebook's language from."""
        info = kept.info.get("language_info")
        if self.document is None or not isinstance(info, dict) or not info.get("name"):
            return
        try:
            nb = await self.document.snapshot()
            if (nb.get("metadata") or {}).get("language_info") == info:
                return

            def write(nb: dict[str, Any]) -> None:
                nb.setdefault("metadata", {})["language_info"] = dict(info)

            await self.document.change(write)
        except Exception as e:  # a failure there does not stop the run
            self.log.warning("jupyter_mcp: could not note the language of %s: %s", self.shown, e)

    async def _tell(self, what: str, cell_id: str | None, *args: Any) -> None:
        """Report a step to the notebook document; a failure there does not stop the run."""
        if self.document is None or cell_id is None:
            return
        try:
            await getattr(self.document, what)(cell_id, *args)
        except Exception as e:
            self.log.warning("jupyter_mcp: could not show a run in %s: %s", self.shown, e)
            if self.notebook_error is None:
                self.notebook_error = (
                    f"The outputs could not all be written into {self.shown}: {e}; "
                    "they are in this answer"
                )

    async def stop(self, reason: str) -> None:
        """Interrupt the kernel and wait for the run to end with what it has.

        ``reason`` is "timeout" or "interrupted". A kernel that does not stop within
        :data:`INTERRUPT_GRACE` seconds is left running and the execution ends anyway.
        """
        task = self.task
        if task is None or task.done():
            return
        if self.stop_reason is None:
            self.stop_reason = reason
        if not self._in_kernel:
            # Still waiting for the kernel (another call's run, or another client's cell):
            # nothing of ours is in it to interrupt.
            if self._waiting:
                self.error = self.error or (
                    "The kernel was busy (running another client's cell, or another run) until "
                    f"this run stopped ({reason}); the cell was not sent to it"
                )
            task.cancel()
            await asyncio.wait({task}, timeout=INTERRUPT_GRACE)
            return
        try:
            await managers.interrupt_kernel(self.clients.serverapp, self.kernel.kernel_id)
        except Exception as e:
            self.log.warning("jupyter_mcp: could not interrupt kernel %s: %s", self.kernel, e)
        done, _ = await asyncio.wait({task}, timeout=INTERRUPT_GRACE)
        if not done:
            self.error = self.error or (
                f"The kernel did not stop within {INTERRUPT_GRACE:g} s of the interrupt; it "
                "may still be running the cell (restart it with kernel_action to free it)"
            )
            task.cancel()
            await asyncio.wait({task}, timeout=INTERRUPT_GRACE)

    async def wait(self, seconds: float | None = None) -> None:
        """Wait until the run ends, at most ``seconds``; being cancelled does not stop it."""
        if self.task is not None and not self.task.done():
            await asyncio.wait({asyncio.shield(self.task)}, timeout=seconds)

    # -- reporting ----------------------------------------------------------------------------

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(PROGRESS_TICK)
            self._report(force=True)

    def _report(self, *, force: bool = False, final: bool = False) -> None:
        reporter = self.reporter
        if reporter is None:
            return
        now = time.monotonic()
        if not (force or final) and now - self._last_report < PROGRESS_MIN_GAP:
            # Too soon after the last one: say the latest line a moment later instead.
            if self._deferred is None:
                wait = PROGRESS_MIN_GAP - (now - self._last_report)
                self._deferred = asyncio.get_running_loop().call_later(wait, self._report_later)
            return
        if self._deferred is not None:
            self._deferred.cancel()
            self._deferred = None
        self._last_report = now
        total = len(self.steps)
        done = sum(1 for r in self.runs if r.status != "running")
        # Cells done plus a fraction that grows with the running cell's time and stays below
        # 1; never less than the last report (the clock starts again with each cell).
        in_cell = now - self._cell_started
        progress = float(total if final else done + in_cell / (in_cell + 10.0))
        progress = max(progress, self._last_progress + 1e-6)
        self._last_progress = progress
        elapsed = time.time() - self.started
        cell = self.runs[-1].cell_id if self.runs else None
        where = f"cell {min(len(self.runs), total)} of {total}" if total > 1 else "running"
        if cell is not None:
            where += f" ({cell})" if total > 1 else f" cell {cell}"
        message = f"{where}, {elapsed:.1f} s"
        if final:
            message = f"{self.status} after {elapsed:.1f} s"
        if self._last_line:
            message += f": {self._last_line}"
        if not self._reported:
            # A client that cancels gets no answer: the first notification names the run, so
            # get_execution can still tell what it did.
            message = f"execution {self.id}: {message}"
            self._reported = True
        try:
            reporter(progress, float(total), message)
        except Exception:  # a lost notification never fails the run
            self.log.debug("jupyter_mcp: progress dropped", exc_info=True)

    def _report_later(self) -> None:
        self._deferred = None
        if not self.done:
            self._report()

    def answer(self) -> dict[str, Any]:
        """The run as tools answer it: id, status and each cell's outputs so far."""
        value: dict[str, Any] = {"executionId": self.id, "status": self.status, "cells": []}
        for run in self.runs:
            value["cells"].append(
                {
                    "cellId": run.cell_id,
                    "executionCount": run.execution_count,
                    "status": run.status,
                    **run.output_objects(),
                }
            )
        ran = {r.cell_id for r in self.runs}
        not_run = [s.cell_id for s in self.steps if s.cell_id not in ran]
        if self.done and not_run:
            value["notRun"] = not_run
        end = self.ended if self.ended is not None else time.time()
        value["elapsedMs"] = round((end - self.started) * 1000)
        if self.error:
            value["error"] = self.error
        if self.notebook_error:
            value["notebookError"] = self.notebook_error
        return value

    def view_data(self) -> dict[str, Any]:
        """The cells' outputs so far with their rich data (HTML, SVG, charts), for a view."""
        cells = [
            {
                "cellId": run.cell_id,
                "executionCount": run.execution_count,
                "status": run.status,
                **run.raw_outputs(),
            }
            for run in self.runs
        ]
        return {"path": self.shown, "cells": cells}

    def images(self) -> list[Image]:
        """The pictures among the outputs so far (at most :data:`MAX_IMAGES`)."""
        images: list[Image] = []
        for run in self.runs:
            images.extend(images_of(run.outputs.outputs))
        return images[:MAX_IMAGES]


class Executions:
    """The server's notebook runs: started here, followed up by id; the kept kernel clients."""

    def __init__(self, serverapp: Any, log: logging.Logger) -> None:
        self.serverapp = serverapp
        self.log = log
        self.clients = KernelClients(serverapp)
        self._executions: OrderedDict[str, Execution] = OrderedDict()

    def start(
        self,
        kernel: NotebookKernel,
        shown: str,
        steps: list[Step],
        *,
        document: NotebookDocument | None,
        timeout_ms: float,
        reporter: Reporter | None,
    ) -> Execution:
        """Start running ``steps`` in ``kernel``; the execution runs until it ends or stops."""
        if not 0 < timeout_ms <= MAX_TIMEOUT_MS:
            raise ToolError(
                f"timeoutMs must be between 1 and {MAX_TIMEOUT_MS} milliseconds, got {timeout_ms:g}"
            )
        execution = Execution(
            id=self._new_id(),
            shown=shown,
            kernel=kernel,
            steps=steps,
            document=document,
            clients=self.clients,
            log=self.log,
            timeout=timeout_ms / 1000,
            principal=current_principal.get(),
            reporter=reporter,
        )
        self._executions[execution.id] = execution
        self._forget_old()
        execution.begin()
        return execution

    def _new_id(self) -> str:
        """An unguessable id (128 random bits) for a new execution: the id of the MCP task the
        call runs as, when it is one, so that the task and the run are found by one id."""
        task = running_task.get()
        if task is not None and task.task_id not in self._executions:
            return task.task_id
        return secrets.token_hex(16)

    def _forget_old(self) -> None:
        finished = [e.id for e in self._executions.values() if e.done]
        for execution_id in finished[: max(0, len(finished) - KEEP_FINISHED)]:
            del self._executions[execution_id]

    def get(self, execution_id: str) -> Execution:
        """The execution ``execution_id`` (running, or finished recently) of the principal the
        call runs for: another's answers as one that never existed, as its MCP task does."""
        execution = self._executions.get(execution_id)
        if execution is None or execution.principal != current_principal.get():
            raise ToolError(
                f"No execution {execution_id!r}: it never existed or finished long ago "
                f"(the last {KEEP_FINISHED} finished ones are kept)"
            )
        return execution

    async def run(self, execution: Execution) -> None:
        """Wait for ``execution`` to end; a cancelled wait interrupts it and keeps what ran."""
        try:
            await execution.wait()
        except asyncio.CancelledError:
            await asyncio.shield(execution.stop("interrupted"))
            raise

    async def shutdown(self) -> None:
        """Stop every running execution and close the kept clients (the server is stopping)."""
        for execution in list(self._executions.values()):
            if not execution.done and execution.task is not None:
                execution.task.cancel()
                await asyncio.wait({execution.task}, timeout=INTERRUPT_GRACE)
        self.clients.close()
