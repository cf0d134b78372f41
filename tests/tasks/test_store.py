"""The task store on its own: states, ttl, limits, cancelling, messages from worker threads."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from jupyter_mcp.tasks import store as store_module
from jupyter_mcp.tasks.store import Task, TaskLimitError, TaskStore


class Failure(Exception):
    """What an ``MCPError`` looks like to the store: a code and a message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def answering(result: dict[str, Any], *, after: float = 0.0) -> Any:
    async def work(task: Task) -> dict[str, Any]:
        await asyncio.sleep(after)
        return result

    return work


OK = {"content": [{"type": "text", "text": "fine"}], "isError": False}
TOOL_ERROR = {"content": [{"type": "text", "text": "no such file"}], "isError": True}


async def test_how_the_work_ends_decides_the_state() -> None:
    store = TaskStore()

    async def raises(task: Task) -> dict[str, Any]:
        raise Failure(-32602, "bad params")

    async def crashes(task: Task) -> dict[str, Any]:
        raise RuntimeError("a bug")

    async def dies(task: Task) -> dict[str, Any]:
        task.fail("The kernel died")
        return OK

    tasks = [
        store.start("p", "tool", {}, 60, work)
        for work in (answering(OK), answering(TOOL_ERROR), raises, crashes, dies)
    ]
    await asyncio.gather(*(t.wait() for t in tasks))

    assert [t.state for t in tasks] == ["completed", "failed", "failed", "failed", "failed"]
    assert tasks[0].message and tasks[0].message.startswith("Completed after")
    assert tasks[1].message and "no such file" in tasks[1].message
    assert tasks[2].error == {"code": -32602, "message": "bad params"}
    assert tasks[3].error is not None and tasks[3].error["code"] == -32603
    assert "RuntimeError: a bug" in tasks[3].error["message"]
    assert tasks[4].result == OK and tasks[4].message == "The kernel died"


async def test_a_task_is_kept_while_it_runs_and_for_its_ttl_after_it_ended() -> None:
    store = TaskStore()
    task = store.start("p", "tool", {}, 0.3, answering(OK, after=0.6))
    await asyncio.sleep(0.45)  # past its ttl counted from creation, but still running
    assert store.get(task.task_id, "p") is task
    growing = task.reported_ttl()
    await task.wait()
    ended_ttl = task.reported_ttl()
    assert ended_ttl > growing >= 0.75  # running time so far plus the ttl
    assert store.get(task.task_id, "p") is task
    await asyncio.sleep(0.7)  # the ttl after its end is over: the timer swept it
    assert task.task_id not in store._tasks
    assert store.get(task.task_id, "p") is None
    assert store.list("p") == []


async def test_a_task_is_its_principals_alone() -> None:
    store = TaskStore()
    task = store.start("alice", "tool", {}, 60, answering(OK))
    assert store.get(task.task_id, "bob") is None
    assert store.get(task.task_id, None) is None
    assert store.list("bob") == []
    assert store.get(task.task_id, "alice") is task
    assert len(task.task_id) == 32 and int(task.task_id, 16) >= 0


async def test_limits_on_running_and_kept_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "MAX_RUNNING", 2)
    monkeypatch.setattr(store_module, "MAX_KEPT", 3)
    store = TaskStore()
    gate = asyncio.Event()

    async def held(task: Task) -> dict[str, Any]:
        await gate.wait()
        return OK

    running = [store.start("p", "tool", {}, 60, held) for _ in range(2)]
    with pytest.raises(TaskLimitError, match="2 tasks of this client are still running"):
        store.start("p", "tool", {}, 60, held)
    other = store.start("q", "tool", {}, 60, answering(OK))  # another principal has its own
    gate.set()
    await asyncio.gather(*(t.wait() for t in [*running, other]))
    later = [store.start("p", "tool", {}, 60, answering(OK)) for _ in range(2)]
    await asyncio.gather(*(t.wait() for t in later))
    # At most three kept: the oldest ended one went first.
    assert [t.task_id for t in store.list("p")] == [t.task_id for t in [running[1], *later]]
    # And at most so many characters of results: a large one pushes the oldest out.
    monkeypatch.setattr(store_module, "MAX_KEPT", 100)
    monkeypatch.setattr(store_module, "MAX_KEPT_CHARS", 4100)
    before = [t.task_id for t in store.list("p")]
    big = {"content": [{"type": "text", "text": "x" * 4000}], "isError": False}
    large = store.start("p", "tool", {}, 60, answering(big))
    await large.wait()
    kept = store.list("p")
    assert large.size > 4000 and large.arguments == {}
    assert sum(t.size for t in kept) <= 4100 and kept[-1] is large
    assert len(kept) < 4 and [t.task_id for t in kept[:-1]] == before[len(before) - len(kept) + 1 :]


async def test_cancelling_stops_the_work_and_the_task_stays_cancelled() -> None:
    store = TaskStore()
    stopped = asyncio.Event()

    async def stubborn(task: Task) -> dict[str, Any]:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            stopped.set()
            return OK  # a tool that answers anyway once stopped
        return TOOL_ERROR

    task = store.start("p", "tool", {}, 60, stubborn)
    await asyncio.sleep(0.05)
    assert await store.cancel(task) is True
    assert stopped.is_set()
    assert task.state == "cancelled" and task.result is None
    assert task.message and task.message.startswith("Cancelled by request")
    assert await store.cancel(task) is False  # already in a terminal state: nothing to stop


async def test_observers_hear_each_change_and_messages_come_from_any_thread() -> None:
    store = TaskStore()
    heard: list[tuple[str, str | None]] = []
    store.observers.append(lambda task, event: heard.append((event, task.message)))
    release = asyncio.Event()

    async def reporting(task: Task) -> dict[str, Any]:
        thread = threading.Thread(target=task.note, args=("from a worker thread",))
        thread.start()
        thread.join()
        await release.wait()
        return OK

    task = store.start("p", "tool", {}, 60, reporting)
    store.announce(task)
    store.announce(task)  # said once
    for _ in range(100):
        if ("progress", "from a worker thread") in heard:
            break
        await asyncio.sleep(0.01)
    release.set()
    await task.wait()

    assert [event for event, _ in heard] == ["announced", "progress", "ended"]
    assert heard[1] == ("progress", "from a worker thread")
    assert heard[2][1] and heard[2][1].endswith("; last progress: from a worker thread")
