"""Running cells in a notebook's kernel: real ipykernel kernels of a real Jupyter server.

The document here is an in-memory notebook that records what the runner tells it, so these
tests see the order of ``run_started`` / outputs / ``run_finished`` exactly; the file and live
documents are tested with the notebook tools.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import gc
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import nbformat
import pytest

from jupyter_mcp.core.context import ToolContext, progress_reporter
from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.core.registry import WithImages, WithViewData
from jupyter_mcp.documents.notebook_file import FileNotebooks
from jupyter_mcp.kernels import introspection, runner
from jupyter_mcp.kernels.managers import connected_client, restart_kernel
from jupyter_mcp.kernels.sessions import find_notebook_kernel
from jupyter_mcp.services import build_services
from jupyter_mcp.tools.kernels import (
    execute_code_in_kernel,
    execute_notebook_cells,
    get_execution,
    get_kernel_completions,
    get_kernel_variables,
    kernel_action,
)

T = TypeVar("T")
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQ"
    "AAAABJRU5ErkJggg=="
)


class MemoryNotebook:
    """A NotebookDocument kept in memory that records every report of the runner."""

    location = "file"

    def __init__(self, path: Path, shown: str) -> None:
        self.path, self.shown = path, shown
        self.nb: dict[str, Any] = nbformat.read(path, as_version=4)
        self.events: list[tuple[Any, ...]] = []

    def _cell(self, cell_id: str) -> dict[str, Any]:
        return next(c for c in self.nb["cells"] if c["id"] == cell_id)

    async def snapshot(self) -> dict[str, Any]:
        return copy.deepcopy(self.nb)

    async def change(self, edit: Callable[[dict[str, Any]], T]) -> T:
        return edit(self.nb)

    async def run_started(self, cell_id: str) -> None:
        self.events.append(("started", cell_id))
        self._cell(cell_id).update(outputs=[], execution_count=None)

    async def output(self, cell_id: str, output: dict[str, Any]) -> None:
        self.events.append(("output", cell_id, output["output_type"]))
        self._cell(cell_id)["outputs"].append(output)

    async def clear_output(self, cell_id: str) -> None:
        self.events.append(("cleared", cell_id))
        self._cell(cell_id)["outputs"] = []

    async def run_finished(self, cell_id: str, execution_count: int | None) -> None:
        self.events.append(("finished", cell_id, execution_count))
        self._cell(cell_id)["execution_count"] = execution_count


class MemoryNotebooks:
    """Opens notebooks as the file backend does (same refusals), but in memory."""

    def __init__(self, ctx: ToolContext) -> None:
        self.files = FileNotebooks(ctx)
        self.open_documents: dict[Path, MemoryNotebook] = {}

    async def open(self, path: Path, shown: str) -> MemoryNotebook:
        await self.files.open(path, shown)
        if path not in self.open_documents:
            self.open_documents[path] = MemoryNotebook(path, shown)
        return self.open_documents[path]


@pytest.fixture
def ctx(jp_serverapp: Any, jp_root_dir: Path, jp_asyncio_loop: Any) -> Iterator[ToolContext]:
    context = ToolContext(root_dir=jp_root_dir, serverapp=jp_serverapp)
    context.services = build_services(context)
    context.services.notebooks = MemoryNotebooks(context)
    yield context

    async def clean_up() -> None:
        await context.services.executions.shutdown()
        for session in await jp_serverapp.session_manager.list_sessions():
            await jp_serverapp.session_manager.delete_session(session["id"])

    jp_asyncio_loop.run_until_complete(clean_up())


def notebook(root: Path, name: str, *sources: str, markdown: tuple[int, ...] = ()) -> Path:
    nb = nbformat.v4.new_notebook()
    for i, source in enumerate(sources):
        make = nbformat.v4.new_markdown_cell if i in markdown else nbformat.v4.new_code_cell
        nb.cells.append(make(source, id=f"c{i}"))
    path = root / name
    nbformat.write(nb, path)
    return path


def doc(ctx: ToolContext, path: Path) -> MemoryNotebook:
    return ctx.services.notebooks.open_documents[path]  # type: ignore[union-attr]


def with_images(answer: Any) -> WithImages:
    """A run's answer: its pictures beside its value, inside the data it offers the
    cell-outputs view (its outputs' MIME bundles)."""
    assert isinstance(answer, WithViewData)
    assert isinstance(answer.value, WithImages)
    return answer.value


async def run(ctx: ToolContext, name: str, **arguments: Any) -> dict[str, Any]:
    return dict(with_images(await execute_notebook_cells(ctx, name, **arguments)).value)


async def test_cells_run_in_order_as_a_user_run_and_stop_at_the_first_error(
    ctx: ToolContext, jp_root_dir: Path
) -> None:
    path = notebook(
        jp_root_dir,
        "a.ipynb",
        "x = 6\nprint('six')",
        "# notes",
        "x * 7",
        "1 / 0",
        "print('never')",
        markdown=(1,),
    )
    answer = await run(ctx, "a.ipynb")
    assert answer["status"] == "error"
    assert [(c["cellId"], c["status"], c["executionCount"]) for c in answer["cells"]] == [
        ("c0", "ok", 1),
        ("c2", "ok", 2),
        ("c3", "error", 3),
    ]
    assert answer["notRun"] == ["c4"]
    assert answer["cells"][0]["outputs"][0] == {
        "outputType": "stream",
        "name": "stdout",
        "text": "six\n",
        "mimeTypes": ["text/plain"],
        "truncated": False,
    }
    assert answer["cells"][1]["outputs"][0]["text"] == "42"
    error = answer["cells"][2]["outputs"][0]
    assert (error["ename"], error["evalue"]) == ("ZeroDivisionError", "division by zero")
    assert "\x1b" not in error["text"] and "1 / 0" in error["text"]
    # The document heard each cell start, its outputs, then its count, in that order.
    assert doc(ctx, path).events == [
        ("started", "c0"),
        ("output", "c0", "stream"),
        ("finished", "c0", 1),
        ("started", "c2"),
        ("output", "c2", "execute_result"),
        ("finished", "c2", 2),
        ("started", "c3"),
        ("output", "c3", "error"),
        ("finished", "c3", 3),
    ]


async def test_cells_by_id_or_range_and_bad_choices(ctx: ToolContext, jp_root_dir: Path) -> None:
    notebook(jp_root_dir, "b.ipynb", "a = 1", "b = 2", "# md", "c = 3", markdown=(2,))
    answer = await run(ctx, "b.ipynb", cellIds=["c3", "c0"])
    assert [c["cellId"] for c in answer["cells"]] == ["c0", "c3"]  # notebook order
    answer = await run(ctx, "b.ipynb", fromIndex=1, toIndex=3)
    assert [c["cellId"] for c in answer["cells"]] == ["c1", "c3"]
    refusals = {
        "unknown": {"cellIds": ["nope"]},
        "markdown": {"cellIds": ["c2"]},
        "range": {"fromIndex": 4},
        "order": {"fromIndex": 3, "toIndex": 1},
        "both": {"cellIds": ["c0"], "fromIndex": 0},
        "no code": {"fromIndex": 2, "toIndex": 2},
    }
    messages = {}
    for label, arguments in refusals.items():
        with pytest.raises(ToolError) as caught:
            await run(ctx, "b.ipynb", **arguments)
        messages[label] = str(caught.value)
    assert "No cell with id 'nope' in b.ipynb" in messages["unknown"]
    assert "'c2'" in messages["markdown"] and "markdown or raw" in messages["markdown"]
    assert "fromIndex 4 is out of range: b.ipynb has 4 cells (0 to 3)" == messages["range"]
    assert "after toIndex" in messages["order"]
    assert "not both" in messages["both"]
    assert "no code cells in cells 2 to 2 of b.ipynb" in messages["no code"]
    (jp_root_dir / "plain.txt").write_text("x")
    with pytest.raises(ToolError, match="plain.txt is not a notebook"):
        await run(ctx, "plain.txt")
    with pytest.raises(ToolError, match="not found"):
        await run(ctx, "missing.ipynb")


async def test_the_kernel_is_the_notebooks_session_kernel(
    ctx: ToolContext, jp_serverapp: Any, jp_root_dir: Path
) -> None:
    path = notebook(jp_root_dir, "shared.ipynb", "shared = 'from the agent'")
    await run(ctx, "shared.ipynb")
    kernel = await find_notebook_kernel(ctx, path)
    assert kernel is not None
    sessions = await jp_serverapp.session_manager.list_sessions()
    assert [(s["path"], s["kernel"]["id"]) for s in sessions] == [
        ("shared.ipynb", kernel.kernel_id)
    ]
    answer = await execute_code_in_kernel(ctx, pathInProject="shared.ipynb", code="print(shared)")
    assert answer.value["outputs"][0]["text"] == "from the agent\n"


async def test_pictures_and_rich_outputs(ctx: ToolContext, jp_root_dir: Path) -> None:
    notebook(
        jp_root_dir,
        "pic.ipynb",
        "from IPython.display import display, Image, HTML\nimport base64\n"
        f"display(Image(data=base64.b64decode('{PNG}'), format='png'))\n"
        "display(HTML('<b>bold</b>'))",
    )
    answer = with_images(await execute_notebook_cells(ctx, "pic.ipynb"))
    outputs = answer.value["cells"][0]["outputs"]
    assert [sorted(o["mimeTypes"]) for o in outputs] == [
        ["image/png", "text/plain"],
        ["text/html", "text/plain"],
    ]
    assert outputs[1]["text"] == "<IPython.core.display.HTML object>"
    assert [(i.mime_type, i.data) for i in answer.images] == [("image/png", PNG)]


async def test_input_fails_at_once_with_a_clear_error(ctx: ToolContext, jp_root_dir: Path) -> None:
    notebook(jp_root_dir, "ask.ipynb", "name = input('Your name? ')", "print('after')")
    started = time.monotonic()
    answer = await run(ctx, "ask.ipynb", timeoutMs=60_000)
    assert time.monotonic() - started < 30
    assert answer["status"] == "error"
    assert answer["cells"][0]["outputs"][0]["ename"] == "StdinNotImplementedError"
    assert "asked for input" in answer["error"] and "no stdin" in answer["error"]
    assert answer["notRun"] == ["c1"]


async def test_a_timeout_interrupts_the_kernel_and_answers_what_ran(
    ctx: ToolContext, jp_root_dir: Path
) -> None:
    path = notebook(
        jp_root_dir,
        "slow.ipynb",
        "print('before', flush=True)",
        "import time\nprint('sleeping', flush=True)\ntime.sleep(60)",
        "print('never')",
    )
    started = time.monotonic()
    answer = await run(ctx, "slow.ipynb", timeoutMs=3000)
    assert time.monotonic() - started < 30
    assert answer["status"] == "timeout"
    assert [(c["cellId"], c["status"]) for c in answer["cells"]] == [
        ("c0", "ok"),
        ("c1", "timeout"),
    ]
    texts = [o.get("ename") or o["text"] for o in answer["cells"][1]["outputs"]]
    assert texts == ["sleeping\n", "KeyboardInterrupt"]
    assert answer["notRun"] == ["c2"]
    assert doc(ctx, path).events[-1] == ("finished", "c1", 2)
    # The kernel is free again and kept its state.
    again = await run(ctx, "slow.ipynb", cellIds=["c2"])
    assert again["status"] == "ok" and again["cells"][0]["executionCount"] == 3


async def test_a_kernel_that_ignores_the_interrupt_is_left_and_said_to_be_busy(
    ctx: ToolContext, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "INTERRUPT_GRACE", 1.0)
    notebook(
        jp_root_dir,
        "deaf.ipynb",
        "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "print('deaf', flush=True)\ntime.sleep(30)",
    )
    # The kernel is started first: a run's deadline counts its wait for the kernel, and a
    # start slower than the 1 s deadline (a loaded machine) would end the run before the cell
    # turned deaf.
    await execute_code_in_kernel(ctx, pathInProject="deaf.ipynb", code="1")
    started = time.monotonic()
    answer = await run(ctx, "deaf.ipynb", timeoutMs=1000)
    assert time.monotonic() - started < 20
    assert answer["status"] == "timeout" and answer["cells"][0]["status"] == "timeout"
    assert answer["cells"][0]["outputs"][0]["text"] == "deaf\n"
    assert "did not stop within 1 s of the interrupt" in answer["error"]
    await kernel_action(ctx, "restart", "deaf.ipynb")  # frees it for the clean-up


async def test_background_runs_are_followed_by_id(ctx: ToolContext, jp_root_dir: Path) -> None:
    notebook(
        jp_root_dir,
        "bg.ipynb",
        "import time\nfor i in range(3):\n    print(i, flush=True)\n    time.sleep(0.5)",
    )
    started = await run(ctx, "bg.ipynb", background=True)
    assert started["status"] == "running"
    execution_id = started["executionId"]
    answer = with_images(await get_execution(ctx, execution_id, waitMs=60_000)).value
    assert answer["status"] == "ok"
    assert answer["cells"][0]["outputs"][0]["text"] == "0\n1\n2\n"
    with pytest.raises(ToolError, match="No execution 'nope'"):
        await get_execution(ctx, "nope")
    # A background run has its deadline too
    notebook(jp_root_dir, "bg-slow.ipynb", "import time\ntime.sleep(60)")
    await execute_code_in_kernel(ctx, pathInProject="bg-slow.ipynb", code="1")  # started first
    slow = await run(ctx, "bg-slow.ipynb", background=True, timeoutMs=1500)
    late = with_images(await get_execution(ctx, slow["executionId"], waitMs=60_000)).value
    assert late["status"] == "timeout" and late["cells"][0]["status"] == "timeout"


async def test_progress_tells_elapsed_time_and_the_last_line(
    ctx: ToolContext, jp_root_dir: Path
) -> None:
    notebook(
        jp_root_dir,
        "p.ipynb",
        "import time\nfor i in range(3):\n    print('step', i, flush=True)\n    time.sleep(1.2)",
        "print('done')",
    )
    updates: list[tuple[float, float | None, str | None]] = []
    token = progress_reporter.set(lambda p, t, m: updates.append((p, t, m)))
    try:
        answer = await run(ctx, "p.ipynb")
    finally:
        progress_reporter.reset(token)
    progress = [u[0] for u in updates]
    assert progress == sorted(progress) and len(set(progress)) == len(progress)
    assert all(u[1] == 2 for u in updates)
    messages = [u[2] or "" for u in updates]
    assert messages[0].startswith(f"execution {answer['executionId']}: ")
    assert any(m.startswith("cell 1 of 2 (c0), ") and m.endswith(": step 2") for m in messages)
    assert messages[-1].startswith("ok after") and messages[-1].endswith(": done")


async def test_a_kernel_that_dies_mid_run_answers_what_it_had_and_the_next_run_is_clean(
    ctx: ToolContext, jp_root_dir: Path
) -> None:
    notebook(
        jp_root_dir,
        "die.ipynb",
        "before = 1\nprint('alive', flush=True)",
        "import os, time\nprint('dying', flush=True)\ntime.sleep(0.5)\nos._exit(1)",
        "print('never')",
    )
    answer = await run(ctx, "die.ipynb")
    assert answer["status"] == "error"
    assert [(c["cellId"], c["status"]) for c in answer["cells"]] == [("c0", "ok"), ("c1", "died")]
    assert answer["cells"][1]["outputs"][0]["text"] == "dying\n"
    assert "The kernel died" in answer["error"]
    # The server restarts the kernel; the next run works in it, with a fresh namespace.
    again = await run(ctx, "die.ipynb", cellIds=["c2"])
    assert again["status"] == "ok", again.get("error")
    assert again["cells"][0]["outputs"][0]["text"] == "never\n"
    gone = await execute_code_in_kernel(ctx, pathInProject="die.ipynb", code="before")
    assert gone.value["outputs"][0]["ename"] == "NameError"


async def test_junk_and_huge_output_come_back_readable_and_capped(
    ctx: ToolContext, jp_root_dir: Path
) -> None:
    path = notebook(
        jp_root_dir,
        "junk.ipynb",
        "import sys\nprint(bytes(range(256)).decode('latin-1'))\n"
        "print(b'raw \\xff\\xfe bytes'.decode('utf-8', 'surrogateescape'))\n"
        "print('lone \\udcff surrogate')",
        "for i in range(200_000):\n    print('line', i)",
    )
    answer = await run(ctx, "junk.ipynb")
    assert answer["status"] == "ok"
    junk = "".join(o["text"] for o in answer["cells"][0]["outputs"])
    assert "\x00" not in junk and "\x1b" not in junk and "\udcff" not in junk
    assert "lone \ufffd surrogate" in junk
    assert "raw \ufffd\ufffd bytes" in junk
    # The agent gets the head and tail of the stream, and the note of what the cell dropped.
    big = answer["cells"][1]["outputs"]
    assert big[0]["truncated"] is True and big[0]["text"].startswith("line 0\n")
    assert "characters cut" in big[0]["text"] and len(big[0]["text"]) < 10_000
    assert "more characters were not kept" in big[-1]["text"]
    # Everything the document got is valid Unicode, so the notebook can be saved.
    nbformat.writes(nbformat.from_dict(doc(ctx, path).nb)).encode("utf-8")


async def test_snippets_do_not_change_the_notebook_or_the_count(
    ctx: ToolContext, jp_root_dir: Path
) -> None:
    path = notebook(jp_root_dir, "s.ipynb", "a = 1")
    await run(ctx, "s.ipynb")
    answer = await execute_code_in_kernel(
        ctx, pathInProject="s.ipynb", code="b = a + 1\nprint(b)\nb * 10"
    )
    assert answer.value == {
        "status": "ok",
        "outputs": [
            {
                "outputType": "stream",
                "name": "stdout",
                "text": "2\n",
                "mimeTypes": ["text/plain"],
                "truncated": False,
            },
            {
                "outputType": "execute_result",
                "text": "20",
                "mimeTypes": ["text/plain"],
                "truncated": False,
            },
        ],
    }
    failed = await execute_code_in_kernel(
        ctx, pathInProject="s.ipynb", code="import time; time.sleep(30)", timeoutMs=1000
    )
    assert failed.value["status"] == "timeout"
    assert doc(ctx, path).events == [("started", "c0"), ("finished", "c0", 1)]
    count = await run(ctx, "s.ipynb")
    assert count["cells"][0]["executionCount"] == 2  # the snippets did not count


async def test_cancelling_the_wait_interrupts_the_kernel(
    ctx: ToolContext, jp_root_dir: Path
) -> None:
    notebook(jp_root_dir, "c.ipynb", "import time\nprint('go', flush=True)\ntime.sleep(60)")
    call = asyncio.ensure_future(run(ctx, "c.ipynb"))
    executions = ctx.services.executions
    for _ in range(200):
        running = [
            e for e in executions._executions.values() if e.runs and e.runs[0].outputs.outputs
        ]
        if running:
            break
        await asyncio.sleep(0.05)
    execution = running[0]
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    await execution.wait(30)
    assert execution.status == "interrupted"
    assert execution.runs[0].status == "interrupted"
    assert execution.runs[0].outputs.outputs[-1]["ename"] == "KeyboardInterrupt"


class _Call:
    """Stands for what a tool call's context holds (its handler, its MCP session)."""

    def report(self, progress: float, total: float | None, message: str | None) -> None:
        pass


_the_call: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("the_call", default=None)


async def _collected(calls: dict[str, weakref.ref[_Call]]) -> dict[str, list[str]]:
    """The calls still alive after a collection, with what refers to them. A timer that was
    cancelled stays in the loop, with the context it was made in, until its time: what holds
    a call only that long is let go of first (up to 30 s); a leak holds it for good."""
    for _ in range(300):
        gc.collect()
        if all(ref() is None for ref in calls.values()):
            break
        await asyncio.sleep(0.1)
    return {
        name: [type(r).__name__ for r in gc.get_referrers(ref())]
        for name, ref in calls.items()
        if ref() is not None
    }


async def test_a_finished_run_kept_for_follow_ups_holds_nothing_of_the_call_that_started_it(
    ctx: ToolContext, jp_root_dir: Path
) -> None:
    """The last finished runs are kept for get_execution; each held the context of the call
    that started it (its task, its deadline's timer) and the call's progress reporter, and
    through them the call's handler and MCP session: 64 calls' worth, for the server's life."""
    notebook(jp_root_dir, "kept.ipynb", "print('ran')")
    # The kernel and its kept client are started first, outside the calls looked at: what
    # they hold lives as long as the kernel, not as the runs kept.
    await run(ctx, "kept.ipynb")

    async def one_call(background: bool) -> tuple[str, weakref.ref[_Call]]:
        call = _Call()
        # In this call's context only: it runs in a task of its own (a copy of the test's).
        _the_call.set(call)
        progress_reporter.set(call.report)
        answer = await run(ctx, "kept.ipynb", background=background)
        return str(answer["executionId"]), weakref.ref(call)

    kept = [
        await asyncio.get_running_loop().create_task(one_call(background))
        for background in (False, True)
    ]
    executions = ctx.services.executions
    await executions.get(kept[-1][0]).wait(60)
    for execution_id, _ in kept:
        execution = executions.get(execution_id)  # still kept for follow-ups
        assert execution.done and execution.answer()["cells"][0]["outputs"][0]["text"] == "ran\n"
    assert await _collected({f"run {n}": ref for n, (_, ref) in enumerate(kept)}) == {}


async def test_a_kernel_started_or_restarted_by_a_call_holds_nothing_of_the_call(
    ctx: ToolContext, jp_root_dir: Path
) -> None:
    """What lives as long as a kernel (the server's restarter and activity stream of it, the
    kept client's channels) was made in the context of the call that started it, restarted it
    or connected to it, with their timers and readers: each kernel held that call's handler
    and MCP session for its life."""
    notebook(jp_root_dir, "lives.ipynb", "print('ran')")

    async def in_a_call(work: Callable[[], Any]) -> weakref.ref[_Call]:
        async def call() -> weakref.ref[_Call]:
            made = _Call()
            _the_call.set(made)  # in the task's own copy of the test's context
            await work()
            return weakref.ref(made)

        return await asyncio.get_running_loop().create_task(call())

    started = await in_a_call(lambda: run(ctx, "lives.ipynb"))
    kernel = await find_notebook_kernel(ctx, jp_root_dir / "lives.ipynb")
    assert kernel is not None
    calls = {
        "started": started,
        # The restart itself (kernel_action's wait for the kernel to answer again, a minute at
        # most, leaves its cancelled timer in the loop as long).
        "restarted": await in_a_call(lambda: restart_kernel(ctx.serverapp, kernel.kernel_id)),
        # The kept client was of the old process: this call connects a new one.
        "connected": await in_a_call(lambda: run(ctx, "lives.ipynb")),
    }
    assert (await run(ctx, "lives.ipynb"))["cells"][0]["outputs"][0]["text"] == "ran\n"
    assert await _collected(calls) == {}


async def test_variables_and_completions_leave_no_trace(
    ctx: ToolContext, jp_root_dir: Path
) -> None:
    notebook(
        jp_root_dir,
        "v.ipynb",
        "import math\n"
        "class Table:\n"
        "    shape = (3, 2)\n"
        "    def __len__(self): return 3\n"
        "    def __repr__(self): return 'Table(3x2)'\n"
        "table = Table()\nnumbers = list(range(100))\n_private = 1\n"
        "def helper(): pass\ntext = 'x' * 1000",
        "num",
    )
    await run(ctx, "v.ipynb", cellIds=["c0"])
    listed = await get_kernel_variables(ctx, "v.ipynb")
    by_name = {v["name"]: v for v in listed}
    assert sorted(by_name) == ["numbers", "table", "text"]
    assert by_name["table"] == {
        "name": "table",
        "type": "__main__.Table",
        "value": "Table(3x2)",
        "length": 3,
        "shape": [3, 2],
    }
    assert by_name["numbers"]["length"] == 100 and by_name["numbers"]["type"] == "list"
    assert len(by_name["numbers"]["value"]) < 100 and by_name["text"]["length"] == 1000
    only = await get_kernel_variables(ctx, "v.ipynb", names=["math", "table"])
    assert [v["name"] for v in only] == ["math", "table"] and only[0]["type"] == "module"
    with pytest.raises(ToolError, match="Not defined in the kernel of v.ipynb: nope"):
        await get_kernel_variables(ctx, "v.ipynb", names=["nope", "table"])
    completed = await get_kernel_completions(
        ctx, pathInProject="v.ipynb", cellId="c1", line=0, character=3
    )
    assert "numbers" in completed["matches"]
    assert (completed["start"], completed["end"]) == (0, 3)
    documented = await get_kernel_completions(
        ctx, pathInProject="v.ipynb", index=1, line=0, character=3, inspect=True
    )
    assert "documentation" in documented
    with pytest.raises(ToolError, match="character 9 is out of range"):
        await get_kernel_completions(ctx, pathInProject="v.ipynb", cellId="c1", line=0, character=9)
    with pytest.raises(ToolError, match="line 1 is out of range"):
        await get_kernel_completions(ctx, pathInProject="v.ipynb", cellId="c1", line=1, character=0)
    # None of it changed the count, the history or the names of the user's namespace.
    check = await execute_code_in_kernel(
        ctx,
        pathInProject="v.ipynb",
        code="print(sorted(k for k in globals() if not k.startswith('_') and k not in "
        "('In', 'Out', 'get_ipython', 'exit', 'quit', 'open')))\n"
        "print(len(In), get_ipython().execution_count)",
    )
    assert check.value["outputs"][0]["text"] == (
        "['Table', 'helper', 'math', 'numbers', 'table', 'text']\n2 2\n"
    )


async def test_kernel_actions(ctx: ToolContext, jp_serverapp: Any, jp_root_dir: Path) -> None:
    path = notebook(jp_root_dir, "k.ipynb", "x = 1")
    with pytest.raises(ToolError, match="k.ipynb has no kernel"):
        await kernel_action(ctx, "restart", "k.ipynb")
    with pytest.raises(ToolError, match="No kernel named 'nope'.*python3"):
        await kernel_action(ctx, "start", "k.ipynb", kernelName="nope")
    started = await kernel_action(ctx, "start", "k.ipynb")
    assert started["name"] == "python3" and set(started) == {"kernelId", "name", "state"}
    await run(ctx, "k.ipynb")
    listed = await kernel_action(ctx, "list")
    assert listed == [
        {
            "kernelId": started["kernelId"],
            "name": "python3",
            "state": "idle",
            "executionCount": 1,
            "lastActivity": listed[0]["lastActivity"],
            "notebooks": ["k.ipynb"],
        }
    ]
    assert listed[0]["lastActivity"].startswith("20")
    restarted = await kernel_action(ctx, "restart", "k.ipynb")
    assert restarted["kernelId"] == started["kernelId"]
    gone = await execute_code_in_kernel(ctx, pathInProject="k.ipynb", code="x")
    assert gone.value["outputs"][0]["ename"] == "NameError"
    interrupted = await kernel_action(ctx, "interrupt", "k.ipynb")
    assert interrupted["kernelId"] == started["kernelId"]
    changed = await kernel_action(ctx, "change", "k.ipynb", kernelName="python3")
    assert changed["kernelId"] != started["kernelId"]
    assert started["kernelId"] not in jp_serverapp.kernel_manager
    assert doc(ctx, path).nb["metadata"]["kernelspec"]["name"] == "python3"
    found = await find_notebook_kernel(ctx, path)
    assert found is not None and found.kernel_id == changed["kernelId"]
    with pytest.raises(ToolError, match="needs kernelName"):
        await kernel_action(ctx, "change", "k.ipynb")
    with pytest.raises(ToolError, match="no notebook is focused"):
        await kernel_action(ctx, "restart")
    shut = await kernel_action(ctx, "shutdown", "k.ipynb")
    assert shut["state"] == "dead"
    assert await jp_serverapp.session_manager.list_sessions() == []


async def test_listing_does_not_wait_for_a_kernel_busy_with_someone_elses_cell(
    ctx: ToolContext, jp_serverapp: Any
) -> None:
    manager = jp_serverapp.kernel_manager
    kernel_id = await manager.start_kernel()
    try:
        # Given a kernel running a long cell for another client (the user's window, say)
        async with connected_client(jp_serverapp, kernel_id) as other:
            other.execute("import time; time.sleep(20)")
            await asyncio.sleep(0.5)
            started = time.monotonic()
            listed = await kernel_action(ctx, "list")
            # Then the list answers at once, without a count for that kernel
            assert time.monotonic() - started < 10
            assert [(k["kernelId"], k["executionCount"]) for k in listed] == [(kernel_id, None)]
    finally:
        await manager.shutdown_kernel(kernel_id, now=True)


async def test_questions_to_a_kernel_busy_with_someone_elses_cell_say_it_is_busy(
    ctx: ToolContext, jp_serverapp: Any, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(introspection, "ANSWER_TIMEOUT", 2.0)
    notebook(jp_root_dir, "busy.ipynb", "x = 1")
    kernel = await kernel_action(ctx, "start", "busy.ipynb")
    async with connected_client(jp_serverapp, kernel["kernelId"]) as other:
        other.execute("import time; time.sleep(20)")
        await asyncio.sleep(0.5)
        started = time.monotonic()
        with pytest.raises(ToolError, match="busy.ipynb did not answer within 2 s: it is busy"):
            await get_kernel_variables(ctx, pathInProject="busy.ipynb")
        with pytest.raises(ToolError, match="it is busy"):
            await get_kernel_completions(
                ctx, pathInProject="busy.ipynb", index=0, line=0, character=1
            )
        assert time.monotonic() - started < 15
        await kernel_action(ctx, "interrupt", "busy.ipynb")


async def test_a_run_waits_for_another_clients_cell_and_never_interrupts_it(
    ctx: ToolContext, jp_serverapp: Any, jp_root_dir: Path
) -> None:
    notebook(jp_root_dir, "shared-kernel.ipynb", "print('agent', flush=True)")
    kernel = await kernel_action(ctx, "start", "shared-kernel.ipynb")
    async with connected_client(jp_serverapp, kernel["kernelId"]) as user:
        # Given the user's cell running in the notebook's kernel
        user_cell = user.execute("import time; time.sleep(4); print('user done')")
        await asyncio.sleep(0.5)
        # When the agent's run reaches its timeout while it waits
        stopped = await run(ctx, "shared-kernel.ipynb", timeoutMs=1500)
        # Then nothing of it was sent, and the user's cell was left to finish
        assert stopped["status"] == "timeout"
        assert "busy (running another client's cell" in stopped["error"]
        assert stopped["cells"] == [] and stopped["notRun"] == ["c0"]
        texts: list[str] = []
        while True:
            msg = await user.get_iopub_msg(timeout=30)
            if msg["parent_header"].get("msg_id") != user_cell:
                continue
            if msg["msg_type"] == "stream":
                texts.append(msg["content"]["text"])
            if msg["msg_type"] == "error":
                texts.append(msg["content"]["ename"])
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
        assert texts == ["user done\n"]
        # And a run that has time waits for the user's cell, then runs
        user.execute("time.sleep(2)")
        await asyncio.sleep(0.5)
        waited = await run(ctx, "shared-kernel.ipynb", timeoutMs=60_000)
        assert waited["status"] == "ok"
        assert waited["cells"][0]["outputs"][0]["text"] == "agent\n"
