"""Resource subscriptions on a real server, both protocol eras, through the official SDK client.

``resources/subscribe`` on a legacy session (2025-11-25) and the resource subscriptions of a
``subscriptions/listen`` stream (2026-07-28) tell a client when anyone changes the thing: a
file written on disk, a notebook's cell (read again to tell which), a JupyterLab window's
report of the user's typing, a kernel's execution. At most one notification per URI per
500 ms with the last change told; a legacy session is not told of its own tool edits; nothing
after unsubscribing or leaving; bounded however many subscriptions and however slow a client.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import nbformat
import pytest
from lab_windows import until
from mcp import MCPError
from mcp.shared.exceptions import MCPDeprecationWarning
from notebook_files import on_disk, write_notebook
from server_configs import collaboration_installed

from jupyter_mcp.lab.live_notebooks import collaboration as collaboration_extension
from jupyter_mcp.resources.subscriptions import THROTTLE, Subscriber

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

#: Seconds a test waits for a notification that must come (generous: a loaded machine).
COMES = 15.0
#: Seconds after which a notification that must not come is taken as not coming.
QUIET = 1.5


class Heard:
    """The notifications a legacy client received, with when they arrived."""

    def __init__(self) -> None:
        self.updates: list[tuple[float, str]] = []
        self.lists: list[str] = []
        self._changed = asyncio.Event()

    async def __call__(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if method == "notifications/resources/updated":
            self.updates.append((time.monotonic(), str(message.params.uri)))
        elif method == "notifications/resources/list_changed":
            self.lists.append(method)
        else:
            return
        self._changed.set()

    def of(self, uri: str) -> list[float]:
        return [at for at, u in self.updates if u == uri]

    async def until(self, condition: Any, timeout: float = COMES) -> None:
        with anyio.fail_after(timeout):
            while not condition():
                self._changed.clear()
                await self._changed.wait()


@asynccontextmanager
async def session(connect: Any, *uris: str, query: str = "") -> AsyncIterator[tuple[Any, Heard]]:
    """A legacy client subscribed to ``uris``, and what it hears."""
    heard = Heard()
    async with connect("legacy", query=query, message_handler=heard) as client:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            for uri in uris:
                await client.subscribe_resource(uri)
        yield client, heard


async def first_event(subscription: Any, timeout: float = COMES) -> Any:
    with anyio.fail_after(timeout):
        async for event in subscription:
            return event


def hub(mcp_app: Any) -> Any:
    return mcp_app.tool_context.services.subscriptions


def code_notebook(path: Path, *sources: str) -> list[str]:
    return write_notebook(path, [nbformat.v4.new_code_cell(s) for s in sources])


# --- a file changed on disk ------------------------------------------------------------------


async def test_a_file_changed_on_disk_is_told_to_a_legacy_subscriber(connect, jp_root_dir):
    target = jp_root_dir / "notes.md"
    target.write_text("one\n")
    uri = "jupyter-mcp://file/notes.md"
    async with session(connect, uri) as (client, heard):
        # When another program writes the file
        written = time.monotonic()
        target.write_text("two\n")
        await heard.until(lambda: heard.of(uri))
        print(f"disk change told after {(heard.of(uri)[0] - written) * 1000:.0f} ms")
        # Then reading it again gives the new text
        assert (await client.read_resource(uri)).contents[0].text == "two\n"
        # And a file that is deleted, then created again, is told both times
        target.unlink()
        await heard.until(lambda: len(heard.of(uri)) >= 2)
        target.write_text("three\n")
        await heard.until(lambda: len(heard.of(uri)) >= 3)


async def test_a_git_checkout_is_told_to_a_listen_stream(connect, jp_root_dir):
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=jp_root_dir, check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    (jp_root_dir / "app.py").write_text("x = 1\n")
    git("add", "app.py")
    git("commit", "-qm", "one")
    (jp_root_dir / "app.py").write_text("x = 2\n")
    uri = "jupyter-mcp://file/app.py"
    async with connect("auto") as client:
        assert client.server_capabilities.resources.subscribe is True
        async with client.listen(resource_subscriptions=[uri]) as subscription:
            assert subscription.honored.resource_subscriptions == [uri]
            git("checkout", "--", "app.py")
            event = await first_event(subscription)
        assert event.uri == uri
        assert (await client.read_resource(uri)).contents[0].text == "x = 1\n"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_at_most_one_notification_per_half_second_and_the_last_change_told(
    connect, jp_root_dir, mode
):
    target = jp_root_dir / "busy.txt"
    target.write_text("0\n")
    uri = "jupyter-mcp://file/busy.txt"
    times: list[float] = []

    async def writes() -> float:
        for n in range(1, 21):  # twenty writes over about a second
            target.write_text(f"{n}\n")
            await asyncio.sleep(0.05)
        return time.monotonic()

    if mode == "legacy":
        async with session(connect, uri) as (client, heard):
            last_write = await writes()
            await heard.until(lambda: heard.of(uri) and heard.of(uri)[-1] >= last_write - 0.05)
            await asyncio.sleep(QUIET)
            times = heard.of(uri)
            final = (await client.read_resource(uri)).contents[0].text
    else:
        async with connect("auto") as client:
            async with client.listen(resource_subscriptions=[uri]) as subscription:
                done = asyncio.ensure_future(writes())
                with anyio.move_on_after(5):
                    async for _event in subscription:
                        times.append(time.monotonic())
                        if done.done() and times[-1] >= done.result() - 0.05:
                            await asyncio.sleep(QUIET)  # nothing more may come
                            break
                last_write = await done
            final = (await client.read_resource(uri)).contents[0].text
    # Then the notifications were at least half a second apart (as sent; received, the
    # network's jitter may shorten one gap a little) ...
    assert len(times) >= 2
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert all(gap >= THROTTLE * 0.5 for gap in gaps), gaps
    assert len(times) <= 2 + (times[-1] - times[0]) / THROTTLE
    # ... and the last one came after the last change, which is what a read then gives
    assert times[-1] >= last_write - 0.05
    assert final == "20\n"


# --- own changes, unsubscribe, leaving ---------------------------------------------------------


async def test_a_legacy_session_is_not_told_of_its_own_edits_but_others_are(connect, jp_root_dir):
    (jp_root_dir / "shared.py").write_text("a = 1\n")
    uri = "jupyter-mcp://file/shared.py"
    async with session(connect, uri) as (agent, agent_heard):
        async with session(connect, uri) as (_other, other_heard):
            async with connect("auto") as modern:
                async with modern.listen(resource_subscriptions=[uri]) as stream:
                    # When the agent edits the file with a tool
                    edit = await agent.call_tool(
                        "replace_specific_text",
                        {
                            "pathInProject": "shared.py",
                            "searchText": "a = 1",
                            "replaceText": "a = 2",
                        },
                    )
                    assert not edit.is_error, edit.content[0].text
                    # Then another session and a listen stream (no session) hear of it
                    await other_heard.until(lambda: other_heard.of(uri))
                    assert (await first_event(stream)).uri == uri
                    # But the agent itself does not
                    await asyncio.sleep(QUIET)
                    assert agent_heard.of(uri) == []
                    # And when the user changes it afterwards, the agent is told
                    (jp_root_dir / "shared.py").write_text("a = 3\n")
                    await agent_heard.until(lambda: agent_heard.of(uri))


async def test_nothing_after_unsubscribe_or_leaving(connect, jp_root_dir, mcp_app):
    target = jp_root_dir / "t.txt"
    target.write_text("0\n")
    uri = "jupyter-mcp://file/t.txt"
    async with session(connect, uri) as (control, control_heard):
        async with session(connect, uri) as (client, heard):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.unsubscribe_resource(uri)
            target.write_text("1\n")
            await control_heard.until(lambda: control_heard.of(uri))
            await asyncio.sleep(QUIET)
            assert heard.of(uri) == []
            assert hub(mcp_app).watched == 1  # the control's subscription still watches it
        # The client left (its session ended): its subscriber goes within a few seconds
        await until(lambda: len(hub(mcp_app).sessions()) == 1, timeout=COMES)
    await until(lambda: hub(mcp_app).watched == 0, timeout=COMES)


async def test_subscriptions_that_cannot_be_are_refused_clearly(connect, jp_root_dir, mcp_app):
    code_notebook(jp_root_dir / "n.ipynb", "x = 1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        async with connect("legacy", query="toolsets=files") as client:
            with pytest.raises(MCPError, match="Path is outside the project root"):
                await client.subscribe_resource("jupyter-mcp://file/../../etc/passwd")
            with pytest.raises(MCPError, match="not among the chosen toolsets") as caught:
                await client.subscribe_resource("jupyter-mcp://notebook/n.ipynb")
            assert caught.value.error.code == -32602
            with pytest.raises(MCPError, match="is not a resource of this server"):
                await client.subscribe_resource("test://watched-resource")
            # A file that does not exist yet may be watched: it is told when it appears
            await client.subscribe_resource("jupyter-mcp://file/later.txt")
    async with connect("auto", query="toolsets=files") as client:
        with pytest.raises(MCPError, match="jupyter-mcp://notebook/n.ipynb is not available"):
            async with client.listen(
                resource_subscriptions=[
                    "jupyter-mcp://file/n.ipynb",
                    "jupyter-mcp://notebook/n.ipynb",
                ]
            ):
                pass
    assert hub(mcp_app).watched <= 1  # only later.txt, until its session is forgotten


# --- notebooks: cells, windows, kernels ------------------------------------------------------


async def test_only_the_changed_cell_is_told_when_the_notebook_file_changes(connect, jp_root_dir):
    path = jp_root_dir / "n.ipynb"
    first, second = code_notebook(path, "a = 1", "b = 2")
    cell = "jupyter-mcp://notebook/n.ipynb/cell/{}"
    notebook = "jupyter-mcp://notebook/n.ipynb"
    async with session(connect, cell.format(first), cell.format(second), notebook) as (_, heard):
        # When another program changes the second cell in the file
        nb = nbformat.read(path, as_version=4)
        nb.cells[1].source = "b = 3"
        nbformat.write(nb, path)
        await heard.until(lambda: heard.of(cell.format(second)) and heard.of(notebook))
        await asyncio.sleep(QUIET)
        # Then the first cell's subscriber was not told
        assert heard.of(cell.format(first)) == []


async def test_a_windows_report_of_typing_reaches_the_subscriber(
    connect, jp_root_dir, open_window, bridge
):
    path = jp_root_dir / "live.ipynb"
    first, second = code_notebook(path, "a = 1", "b = 2")
    window = await open_window()
    window.state(focus=True, open=[{"path": "live.ipynb", "type": "notebook", "dirty": True}])
    await until(lambda: bridge.current() is not None and bridge.current().open)
    cell = "jupyter-mcp://notebook/live.ipynb/cell/{}"
    async with session(connect, cell.format(first), cell.format(second)) as (_, heard):
        async with connect("auto") as modern:
            async with modern.listen(resource_subscriptions=[cell.format(first)]) as stream:
                # When the user types in the first cell (the window reports it, unsaved)
                typed = time.monotonic()
                window.changed("live.ipynb", cells=[first])
                await heard.until(lambda: heard.of(cell.format(first)))
                told = heard.of(cell.format(first))[0] - typed
                print(f"window report told after {told * 1000:.0f} ms")
                assert (await first_event(stream)).uri == cell.format(first)
        await asyncio.sleep(QUIET)
        assert heard.of(cell.format(second)) == []


async def test_variables_are_told_after_an_execution_not_after_a_silent_read(connect, jp_root_dir):
    code_notebook(jp_root_dir / "k.ipynb", "x = 1")
    uri = "jupyter-mcp://kernel/k.ipynb/variables"
    async with connect("legacy") as runner:
        started = await runner.call_tool(
            "kernel_action", {"action": "start", "pathInProject": "k.ipynb"}
        )
        assert not started.is_error, started.content[0].text
        async with session(connect, uri) as (reader, heard):
            # A read of the variables (a silent request to the kernel) is no change
            await reader.read_resource(uri)
            await asyncio.sleep(QUIET)
            assert heard.of(uri) == []
            # When another session runs code in the kernel
            ran = await runner.call_tool(
                "execute_code_in_kernel", {"pathInProject": "k.ipynb", "code": "y = 2"}
            )
            assert not ran.is_error, ran.content[0].text
            # Then the subscriber is told, and reads the new variable
            await heard.until(lambda: heard.of(uri))
            names = (await reader.read_resource(uri)).contents[0].text
            assert '"name": "y"' in names


async def test_a_runs_outputs_are_told_to_others_not_to_the_session_that_ran_it(
    connect, jp_root_dir
):
    first, _ = code_notebook(jp_root_dir / "run.ipynb", "print('hello')", "x = 2")
    uri = f"jupyter-mcp://notebook/run.ipynb/cell/{first}"
    async with session(connect, uri) as (runner, runner_heard):
        async with session(connect, uri) as (_, other_heard):
            # When one session runs the cell (its outputs and count are written to the file)
            ran = await runner.call_tool(
                "execute_notebook_cells", {"pathInProject": "run.ipynb", "cellIds": [first]}
            )
            assert not ran.is_error, ran.content[0].text
            # Then the other session hears of the cell, and reads its output
            await other_heard.until(lambda: other_heard.of(uri))
            await on_disk(jp_root_dir / "run.ipynb", lambda nb: nb.cells[0].outputs)
            read = (await runner.read_resource(uri)).contents[0].text
            assert "hello" in read
            # And the session that ran it, which has the outputs in its answer, does not
            await asyncio.sleep(QUIET)
            assert runner_heard.of(uri) == []


# --- the list ---------------------------------------------------------------------------------


async def test_the_list_changes_when_a_file_appears_or_a_window_opens_one(
    connect, jp_root_dir, open_window
):
    (jp_root_dir / "a.txt").write_text("a\n")
    async with connect("legacy", message_handler=(heard := Heard())) as client:
        await client.list_resources()  # a session that lists resources follows the list
        async with connect("auto") as modern:
            async with modern.listen(resources_list_changed=True) as stream:
                (jp_root_dir / "new.txt").write_text("new\n")
                await heard.until(lambda: heard.lists)
                assert type(await first_event(stream)).__name__ == "ResourcesListChanged"
                count = len(heard.lists)
                window = await open_window()
                window.state(open=[{"path": "a.txt", "type": "file", "dirty": False}])
                await heard.until(lambda: len(heard.lists) > count)


# --- many subscriptions, a client that does not read -------------------------------------------


async def test_a_thousand_subscriptions_on_one_connection(connect, jp_root_dir, mcp_app):
    for n in range(1000):
        (jp_root_dir / f"f{n:04d}.txt").write_text("0\n")
    uris = [f"jupyter-mcp://file/f{n:04d}.txt" for n in range(1000)]
    started = time.monotonic()
    async with session(connect, *uris) as (client, heard):
        print(f"1000 subscribe requests took {time.monotonic() - started:.1f} s")
        assert hub(mcp_app).watched == 1000
        (jp_root_dir / "f0500.txt").write_text("1\n")
        await heard.until(lambda: heard.of(uris[500]))
        await asyncio.sleep(QUIET)
        assert [u for _, u in heard.updates] == [uris[500]]
    async with connect("auto") as modern:
        started = time.monotonic()
        async with modern.listen(resource_subscriptions=uris) as stream:
            print(f"a listen stream of 1000 resources opened in {time.monotonic() - started:.1f} s")
            assert len(stream.honored.resource_subscriptions) == 1000
            (jp_root_dir / "f0999.txt").write_text("1\n")
            assert (await first_event(stream)).uri == uris[999]
    await until(lambda: hub(mcp_app).watched == 0, timeout=COMES)


async def test_a_subscriber_that_never_reads_holds_one_entry_per_subscription(mcp_app, jp_root_dir):
    # A subscriber whose client never reads: its sends never finish.
    from jupyter_mcp.resources.registry import Scope

    the_hub = hub(mcp_app)
    blocked = asyncio.Event()

    async def send(notice: Any) -> None:
        await blocked.wait()

    for n in range(50):
        (jp_root_dir / f"s{n}.txt").write_text("0\n")
    scope = Scope(mcp_app.tool_context, mcp_app.registry)
    subscriber = Subscriber(scope, send)
    the_hub.add_stream(subscriber)
    runner = asyncio.ensure_future(subscriber.run())
    try:
        uris = [f"jupyter-mcp://file/s{n}.txt" for n in range(50)]
        for uri in uris:
            await the_hub.subscribe(subscriber, uri)
        # When every file changes again and again for a few seconds
        for rounds in range(4):
            for n in range(50):
                (jp_root_dir / f"s{n}.txt").write_text(f"{rounds}\n")
            await asyncio.sleep(THROTTLE)
        await asyncio.sleep(THROTTLE * 2)
        # Then what waits for it is one entry per subscription at most, not the 200 changes
        assert 0 < subscriber.waiting <= 50
    finally:
        the_hub.remove(subscriber)
        runner.cancel()
    assert subscriber.waiting == 0


# --- jupyter-collaboration: the shared document ------------------------------------------------


@pytest.mark.parametrize(
    "collaboration",
    [
        pytest.param(
            True,
            marks=pytest.mark.skipif(
                not collaboration_installed(), reason="jupyter-collaboration is not installed"
            ),
        )
    ],
    ids=["collaboration"],
)
async def test_the_shared_document_tells_every_change_but_a_sessions_own(
    connect, jp_root_dir, jp_serverapp, collaboration
):
    path = jp_root_dir / "shared.ipynb"
    first, second = code_notebook(path, "a = 1", "b = 2")
    notebook = "jupyter-mcp://notebook/shared.ipynb"
    cell = "jupyter-mcp://notebook/shared.ipynb/cell/{}"
    async with session(connect, notebook, cell.format(first), cell.format(second)) as (
        agent,
        agent_heard,
    ):
        async with session(connect, notebook, cell.format(first)) as (_, other_heard):
            # When the agent edits the first cell (through the shared document)
            edit = await agent.call_tool(
                "edit_notebook_cell",
                {"pathInProject": "shared.ipynb", "cellId": first, "source": "a = 10"},
            )
            assert not edit.is_error, edit.content[0].text
            # Then the other session hears of the notebook and that cell ...
            await other_heard.until(
                lambda: other_heard.of(notebook) and other_heard.of(cell.format(first))
            )
            # ... and the agent of nothing, not even when the room saves its edit to the file
            await on_disk(path, lambda nb: nb.cells[0].source == "a = 10")
            await asyncio.sleep(QUIET)
            assert agent_heard.updates == []
            # When a user types in the second cell (a change of the shared document that no
            # tool call made, as a window's keystroke arriving over its websocket)
            extension = collaboration_extension(jp_serverapp)
            document = await extension.get_document(
                path="shared.ipynb", content_type="notebook", file_format="json", copy=False
            )
            typed = time.monotonic()
            source = document.ycells[1]["source"]
            source.insert(len(str(source)), "0")
            # Then the agent is told of the notebook and of that cell, not of the first
            await agent_heard.until(
                lambda: agent_heard.of(notebook) and agent_heard.of(cell.format(second))
            )
            told = agent_heard.of(cell.format(second))[0] - typed
            print(f"shared-document keystroke told after {told * 1000:.0f} ms")
            await asyncio.sleep(QUIET)
            assert agent_heard.of(cell.format(first)) == []
            read = await agent.read_resource(cell.format(second))
            assert '"source": "b = 20"' in read.contents[0].text
