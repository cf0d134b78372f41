"""The editor link and the editor/action tools, with scripted windows on a real WebSocket.

A ``FakeWindow`` speaks the labextension's protocol over ``{base_url}mcp/bridge`` of a real
Jupyter server: it reports state and answers requests the way the labextension does. The
real labextension in Chromium is exercised by ``test_browser.py``; these tests pin down the
server's side (routing of requests to the most recent window, timeouts, refusals, approvals,
reload notices, activity records) quickly and without a browser.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from lab_windows import FakeWindow, until
from tornado.httpclient import HTTPClientError


def file_doc(path: str, dirty: bool = False) -> dict[str, Any]:
    return {"path": path, "type": "file", "dirty": dirty}


# -- no window -------------------------------------------------------------------------------


async def test_without_a_window_reads_are_empty_and_edits_fail(ok: Any, fails: Any) -> None:
    assert await ok("get_open_in_editor_file_text") == ""
    assert await ok("get_open_in_editor_file_path") == ""
    # Each refusal says what is missing without a window
    no_editor = "No JupyterLab window is connected, so there is no active editor; open JupyterLab"
    assert (await fails("replace_selected_text", text="x")).startswith(no_editor)
    assert (await fails("replace_current_file_text", text="x")).startswith(no_editor)
    no_actions = "No JupyterLab window is connected, so there are no actions; open JupyterLab"
    assert (await fails("list_available_actions")).startswith(no_actions)
    assert (await fails("execute_action_by_id", actionId="a:b")).startswith(no_actions)


async def test_open_file_checks_the_path_before_asking_a_window(
    fails: Any, jp_root_dir: Path
) -> None:
    (jp_root_dir / "folder").mkdir()
    assert "File not found: nope.py" in await fails("open_file_in_editor", pathInProject="nope.py")
    assert "is a directory" in await fails("open_file_in_editor", pathInProject="folder")
    assert "outside" in (await fails("open_file_in_editor", pathInProject="../x.py")).lower()
    (jp_root_dir / "a.py").write_text("x = 1\n")
    assert "No JupyterLab window" in await fails("open_file_in_editor", pathInProject="a.py")


# -- the socket itself -----------------------------------------------------------------------


async def test_lab_socket_requires_auth_origin_and_a_window_id(
    jp_ws_fetch: Any, jp_http_port: int
) -> None:
    with pytest.raises(HTTPClientError) as refused:
        await jp_ws_fetch("mcp", "bridge", params={"window": "w"}, headers={"Authorization": ""})
    assert refused.value.code == 403
    with pytest.raises(HTTPClientError) as foreign:
        await jp_ws_fetch(
            "mcp", "bridge", params={"window": "w"}, headers={"Origin": "http://evil.example"}
        )
    assert foreign.value.code == 403
    with pytest.raises(HTTPClientError) as bad_id:
        await jp_ws_fetch("mcp", "bridge", params={"window": "../x"})
    assert bad_id.value.code == 400
    ws = await jp_ws_fetch(
        "mcp",
        "bridge",
        params={"window": "w"},
        headers={"Origin": f"http://localhost:{jp_http_port}"},
    )
    welcome = json.loads(await ws.read_message())
    assert welcome["type"] == "welcome"
    ws.close()


async def test_bridge_route_is_not_taken_for_a_tool(call: Any) -> None:
    # POST /mcp/bridge reaches the websocket handler, not the tool route's "Unknown tool".
    with pytest.raises(HTTPClientError):
        await call("bridge")


# -- reading and editing through a window ----------------------------------------------------


async def test_reads_come_from_the_window_with_unsaved_edits(
    open_window: Any, ok: Any, jp_root_dir: Path, bridge: Any
) -> None:
    (jp_root_dir / "src").mkdir()
    (jp_root_dir / "src" / "a.py").write_text("saved\n")
    window = await open_window()
    window.handlers["readText"] = lambda p: {"path": "src/a.py", "type": "file", "text": "typed\n"}
    window.state(active=file_doc("src/a.py", dirty=True), open=[file_doc("src/a.py", True)])
    await until(lambda: bridge.current().active is not None)
    assert await ok("get_open_in_editor_file_text") == "typed\n"
    path = await ok("get_open_in_editor_file_path")
    assert path == str(jp_root_dir / "src" / "a.py")


async def test_status_reports_the_active_and_open_files(
    open_window: Any, jp_fetch: Any, jp_root_dir: Path
) -> None:
    window = await open_window()
    window.state(active=file_doc("b.py"), open=[file_doc("a.py"), file_doc("b.py")])
    await asyncio.sleep(0.1)
    response = await jp_fetch("mcp", "status", method="GET")
    env = json.loads(response.body)["result"]["environment"]
    assert env["activeFile"] == str(jp_root_dir / "b.py")
    assert env["openFiles"] == [str(jp_root_dir / "a.py"), str(jp_root_dir / "b.py")]


async def test_notebook_reads_as_the_same_view_as_the_file_tools(
    open_window: Any, ok: Any, jp_root_dir: Path
) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "P"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Title\n\nSome *text*."),
        nbformat.v4.new_code_cell("import os\nx = 1"),
        nbformat.v4.new_code_cell("%matplotlib inline\nprint(x)"),
    ]
    (jp_root_dir / "n.ipynb").write_text(nbformat.writes(nb))
    window = await open_window()
    cells = [
        {"id": c.id, "cell_type": c.cell_type, "source": c.source, "metadata": {}} for c in nb.cells
    ]
    window.handlers["readText"] = lambda p: {
        "path": "n.ipynb",
        "type": "notebook",
        "cells": cells,
        "metadata": dict(nb.metadata),
    }
    on_disk = (await ok("get_file_text_by_path", pathInProject="n.ipynb"))["content"]
    assert await ok("get_open_in_editor_file_text") == on_disk


async def test_replace_current_text_of_a_notebook_sends_cells_keeping_ids(
    open_window: Any, ok: Any
) -> None:
    window = await open_window()
    cells = [
        {"id": "keep", "cell_type": "code", "source": "a = 1", "metadata": {}},
        {"id": "edit", "cell_type": "code", "source": "b = 2", "metadata": {}},
        {"id": "drop", "cell_type": "markdown", "source": "gone", "metadata": {}},
    ]
    window.handlers["readText"] = lambda p: {
        "path": "n.ipynb",
        "type": "notebook",
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
    }
    window.handlers["replaceDocument"] = lambda p: True
    text = "# %%\na = 1\n\n# %%\nb = 3\n\n# %% [markdown]\n# new\n"
    assert await ok("replace_current_file_text", text=text) == "ok"
    sent = window.requests[-1]
    assert sent["method"] == "replaceDocument"
    got = sent["params"]["cells"]
    # Unchanged and edited cells keep their ids, so the window keeps their outputs.
    assert [c["id"] for c in got] == ["keep", "edit", "drop"]
    assert [c["source"] for c in got] == ["a = 1", "b = 3", "new"]
    assert [c["cell_type"] for c in got] == ["code", "code", "markdown"]


async def test_replace_current_text_of_a_file_and_selection(open_window: Any, ok: Any) -> None:
    window = await open_window()
    window.handlers["readText"] = lambda p: {"path": "a.py", "type": "file", "text": "old"}
    window.handlers["replaceDocument"] = lambda p: True
    window.handlers["replaceSelection"] = lambda p: True
    assert await ok("replace_current_file_text", text="new text") == "ok"
    assert window.requests[-1]["params"] == {"path": "a.py", "text": "new text"}
    assert await ok("replace_selected_text", text="sel") == "ok"
    assert window.requests[-1]["params"] == {"text": "sel"}


async def test_edits_without_an_open_document_fail_clearly(
    open_window: Any, ok: Any, fails: Any
) -> None:
    window = await open_window()
    window.handlers["readText"] = lambda p: None
    window.handlers["replaceSelection"] = lambda p: None
    assert await ok("get_open_in_editor_file_text") == ""
    assert "No file is open in the JupyterLab editor" in await fails(
        "replace_current_file_text", text="x"
    )
    assert "No file is open" in await fails("replace_selected_text", text="x")


async def test_a_window_error_becomes_the_tool_error(open_window: Any, fails: Any) -> None:
    window = await open_window()

    def refuse(params: dict[str, Any]) -> Any:
        raise RuntimeError("The document is read-only")

    window.handlers["replaceSelection"] = refuse
    assert await fails("replace_selected_text", text="x") == "The document is read-only"


async def test_a_silent_window_times_out(open_window: Any, fails: Any, bridge: Any) -> None:
    bridge.timeout = 0.3
    window = await open_window()
    assert "did not answer within 0.3 s" in await fails("replace_selected_text", text="x")
    await until(lambda: window.of_type("cancel"))


async def test_the_most_recently_focused_window_is_the_editor(
    open_window: Any, ok: Any, bridge: Any
) -> None:
    first = await open_window("first")
    first.handlers["readText"] = lambda p: {"path": "1.py", "type": "file", "text": "one"}
    second = await open_window("second")
    second.handlers["readText"] = lambda p: {"path": "2.py", "type": "file", "text": "two"}
    assert await ok("get_open_in_editor_file_text") == "two"  # connected last
    first.state(focus=True)
    await until(lambda: bridge.current().id == "first")
    assert await ok("get_open_in_editor_file_text") == "one"
    await first.close()
    await until(lambda: bridge.current().id == "second")
    assert await ok("get_open_in_editor_file_text") == "two"


async def test_a_background_tab_that_reconnects_does_not_steal_the_editor(
    open_window: Any, bridge: Any
) -> None:
    await open_window("front")
    await open_window("back", focusAge="3600")
    assert bridge.current().id == "front"


async def test_a_window_closing_mid_request_fails_the_call(open_window: Any, fails: Any) -> None:
    window = await open_window()

    async def close_soon() -> None:
        await until(lambda: window.requests)
        window.ws.close()

    closer = asyncio.ensure_future(close_soon())
    assert "disconnected" in await fails("replace_selected_text", text="x")
    await closer


# -- file tools and open documents -----------------------------------------------------------


async def test_file_tools_refuse_files_with_unsaved_edits_and_keep_them(
    open_window: Any, fails: Any, ok: Any, jp_root_dir: Path
) -> None:
    target = jp_root_dir / "a.py"
    target.write_text("on disk\n")
    window = await open_window()
    window.state(active=file_doc("a.py", dirty=True), open=[file_doc("a.py", dirty=True)])
    await asyncio.sleep(0.1)
    error = await fails("rewrite_file_content", pathInProject="a.py", text="agent\n")
    assert "a.py has unsaved changes in JupyterLab; save or revert them first" in error
    assert target.read_text() == "on disk\n"
    assert not window.of_type("reload")
    window.state(open=[file_doc("a.py", dirty=False)], active=file_doc("a.py"))
    await asyncio.sleep(0.1)
    await ok("rewrite_file_content", pathInProject="a.py", text="agent\n")
    assert target.read_text() == "agent\n"
    await until(lambda: window.of_type("reload"))
    # The notice names itself, so that the change the reload makes is known as the writer's.
    [reload] = window.of_type("reload")
    assert reload["path"] == "a.py" and isinstance(reload["origin"], int)


async def test_writes_to_files_not_open_send_no_reload(
    open_window: Any, ok: Any, jp_root_dir: Path
) -> None:
    window = await open_window()
    window.state(open=[file_doc("a.py")])
    await asyncio.sleep(0.05)
    await ok("create_new_file_with_text", pathInProject="b.py", text="x\n")
    await asyncio.sleep(0.1)
    assert not window.of_type("reload")


# -- approvals -------------------------------------------------------------------------------


async def test_dangerous_actions_ask_for_approval(
    open_window: Any, ok: Any, fails: Any, jp_root_dir: Path
) -> None:
    window = await open_window()
    executed: list[str] = []
    window.handlers["hasCommand"] = lambda p: p["id"] != "filebrowser:delete-missing"
    window.handlers["executeCommand"] = lambda p: executed.append(p["id"]) or "ok"
    answers = iter([False, True])
    window.handlers["confirm"] = lambda p: next(answers)

    assert await ok("execute_action_by_id", actionId="docmanager:save") == "ok"
    assert [r["method"] for r in window.requests] == ["executeCommand"]

    error = await fails("execute_action_by_id", actionId="notebook:run-all-cells")
    assert error == "The user did not approve execute_action_by_id; nothing was done"
    confirm = [r for r in window.requests if r["method"] == "confirm"][0]["params"]
    assert confirm["tool"] == "execute_action_by_id"
    assert confirm["arguments"] == 'actionId="notebook:run-all-cells"'
    assert executed == ["docmanager:save"]

    assert await ok("execute_action_by_id", actionId="kernelmenu:shutdown") == "ok"
    assert executed == ["docmanager:save", "kernelmenu:shutdown"]
    assert (
        await ok("execute_action_by_id", actionId="filebrowser:delete-missing")
        == "action not found"
    )


async def test_unknown_actions_are_not_found(open_window: Any, ok: Any) -> None:
    window = await open_window()
    window.handlers["executeCommand"] = lambda p: "not found"
    assert await ok("execute_action_by_id", actionId="no:such") == "action not found"


async def test_approval_times_out_and_closes_the_dialog(
    open_window: Any, fails: Any, mcp_app: Any
) -> None:
    mcp_app.approval_timeout = 0.3
    window = await open_window()
    window.handlers["hasCommand"] = lambda p: True
    error = await fails("execute_action_by_id", actionId="terminal:create-new")
    assert "was not approved" in error and "did not answer within 0.3 s" in error
    await until(lambda: window.of_type("cancel"))


async def test_list_actions_sorted_and_clean(open_window: Any, ok: Any) -> None:
    window = await open_window()
    window.handlers["listCommands"] = lambda p: [
        {"id": "z:last", "text": "Last"},
        {"id": "a:first", "text": "First"},
        {"bad": True},
    ]
    assert await ok("list_available_actions") == [
        {"id": "a:first", "text": "First"},
        {"id": "z:last", "text": "Last"},
    ]


# -- activity --------------------------------------------------------------------------------


async def test_every_call_is_shown_in_the_activity_panel(
    open_window: Any, ok: Any, fails: Any, jp_root_dir: Path, jp_ws_fetch: Any
) -> None:
    (jp_root_dir / "a.py").write_text("x\n")
    window = await open_window()
    await ok("get_file_text_by_path", pathInProject="a.py")
    await fails("get_file_text_by_path", pathInProject="missing.py")
    await until(lambda: len(window.activity()) >= 2)
    first, second = window.activity()[:2]
    assert first["tool"] == "get_file_text_by_path" and first["ok"] is True
    assert first["arguments"] == 'pathInProject="a.py"'
    assert second["ok"] is False and "File not found: missing.py" in second["error"]
    # A window that connects later gets the history in its welcome.
    ws = await jp_ws_fetch("mcp", "bridge", params={"window": "late"})
    welcome = json.loads(await ws.read_message())
    assert [r["tool"] for r in welcome["activity"]][-2:] == ["get_file_text_by_path"] * 2
    ws.close()
    # The duration shown is the call's own: a command that sleeps 0.3 s took at least that.
    await ok("run_command_on_background", command="sleep 0.3")
    await until(lambda: len(ended(window)) >= 3)
    slow = ended(window)[2]
    assert slow["tool"] == "run_command_on_background" and slow["durationMs"] >= 300


def ended(window: FakeWindow) -> list[dict[str, Any]]:
    """The outcomes of calls the window was shown (not their running entries)."""
    return [r for r in window.activity() if not r["running"]]


async def test_a_long_call_is_shown_running_until_its_outcome_replaces_it(
    open_window: Any, ok: Any, jp_ws_fetch: Any
) -> None:
    window = await open_window()
    await ok("wait", milliseconds=10)  # quick: only its outcome is shown
    await until(lambda: len(window.activity()) >= 1)
    quick = window.activity()[0]
    assert quick["running"] is False and quick["id"]

    long_call = asyncio.ensure_future(ok("wait", milliseconds=2500))
    await until(lambda: len(window.activity()) >= 2, timeout=10)
    running = window.activity()[1]
    assert running["running"] is True and running["tool"] == "wait"
    assert running["arguments"] == "milliseconds=2500" and running["durationMs"] >= 500
    assert not long_call.done()
    # A window that connects meanwhile sees it running in its welcome.
    ws = await jp_ws_fetch("mcp", "bridge", params={"window": "meanwhile"})
    welcome = json.loads(await ws.read_message())
    ws.close()
    assert [r["id"] for r in welcome["activity"] if r["running"]] == [running["id"]]

    await long_call
    await until(lambda: len(window.activity()) >= 3, timeout=10)
    outcome = window.activity()[2]
    assert outcome["id"] == running["id"] and outcome["running"] is False
    assert outcome["ok"] is True and outcome["durationMs"] >= 2500
    assert len({quick["id"], running["id"]}) == 2


def _burst(bridge: Any, calls: range, *, outcomes: bool = True) -> None:
    """Start the calls ``calls`` (their ids) and, with ``outcomes``, end them, all in one turn of
    the loop, as the registry tells the editor link of calls."""
    from jupyter_mcp.core.registry import current_call_id

    for i in calls:
        token = current_call_id.set(i)
        try:
            if outcomes:
                bridge.record_call("wait", {"milliseconds": i}, True, None, 1.0)
            else:
                bridge.call_started(i, "wait", {"milliseconds": i})
        finally:
            current_call_id.reset(token)


async def test_a_burst_of_calls_reaches_a_window_in_one_message_with_each_entrys_last_state(
    open_window: Any, bridge: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_mcp.lab import editor

    # Every call is shown running first; a gather long enough that a busy machine's turns
    # cannot split the burst (the test waits for it once).
    monkeypatch.setattr(editor, "RUNNING_AFTER", 0.0)
    monkeypatch.setattr(editor, "ACTIVITY_GATHER", 1.0)
    window = await open_window()
    calls = range(1000, 1040)
    _burst(bridge, calls, outcomes=False)
    await asyncio.sleep(0)  # their running entries show on a later turn, before the outcomes
    await asyncio.sleep(0)
    _burst(bridge, calls)
    # A window connecting meanwhile has the burst in its welcome, and not again after it.
    late = await open_window("late")
    await until(lambda: len(window.activity()) >= len(calls), timeout=10)
    # Each entry once, at the place its call first showed, in its last state: what the panel
    # would end showing had every state been sent (running, then the outcome in its place).
    shown = window.activity()
    assert [r["arguments"] for r in shown] == [f"milliseconds={i}" for i in calls]
    assert all(r["running"] is False and r["ok"] is True for r in shown)
    # 80 states (40 running, 40 outcomes) in one message, or two when a turn of the loop took
    # longer than the gather; every state its own message before.
    assert len(window.of_type("activities")) <= 2
    welcome = late.of_type("welcome")[0]
    assert [r["arguments"] for r in welcome["activity"]][-len(calls) :] == [
        f"milliseconds={i}" for i in calls
    ]
    _burst(bridge, range(2000, 2001))
    await until(lambda: len(late.activity()) >= 1, timeout=10)
    assert [r["arguments"] for r in late.activity()] == ["milliseconds=2000"]


# -- breakpoints ---------------------------------------------------------------------------------


def _two_cell_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "P"}
    nb.cells = [
        nbformat.v4.new_code_cell("a = 1\nb = 2"),
        nbformat.v4.new_markdown_cell("text"),
        nbformat.v4.new_code_cell("c = 3\nd = 4"),
    ]
    return nb


def test_view_lines_map_to_cell_lines_and_back() -> None:
    from jupyter_mcp.documents.notebook_view import (
        notebook_view,
        view_lines_by_cell,
        view_lines_of_cells,
    )

    nb = _two_cell_notebook()
    view = notebook_view(nb).splitlines()
    d_line = view.index("d = 4") + 1
    a_line = view.index("a = 1") + 1
    cells = view_lines_by_cell(nb, {a_line, d_line})
    assert cells == [{"id": nb.cells[0].id, "lines": [1]}, {"id": nb.cells[2].id, "lines": [2]}]
    back = view_lines_of_cells(nb, {c["id"]: c["lines"] for c in cells})
    assert back == {a_line, d_line}


async def test_breakpoints_go_to_windows_and_come_back(
    open_window: Any, ok: Any, jp_root_dir: Path, bridge: Any
) -> None:
    nb = _two_cell_notebook()
    (jp_root_dir / "n.ipynb").write_text(nbformat.writes(nb))
    view = (await ok("get_file_text_by_path", pathInProject="n.ipynb"))["content"].splitlines()
    d_line = view.index("d = 4") + 1
    window = await open_window()
    await until(lambda: window.of_type("breakpoints"))  # the state on connect
    assert await ok("toggle_debugger_breakpoint", pathInProject="n.ipynb", line=d_line)
    await until(lambda: window.of_type("breakpoints")[-1]["files"])
    (entry,) = window.of_type("breakpoints")[-1]["files"]
    assert entry == {
        "path": "n.ipynb",
        "lines": [d_line],
        "cells": [{"id": nb.cells[2].id, "lines": [2]}],
    }
    # The user moves the breakpoint in the gutter: line 1 of the first cell only.
    cells = [
        {"id": c.id, "cell_type": c.cell_type, "source": c.source, "lines": []} for c in nb.cells
    ]
    cells[0]["lines"] = [1]
    window.ws.write_message(
        json.dumps(
            {
                "type": "breakpointsChanged",
                "path": "n.ipynb",
                "kind": "notebook",
                "cells": cells,
                "metadata": dict(nb.metadata),
            }
        )
    )
    a_line = view.index("a = 1") + 1
    path = str(jp_root_dir / "n.ipynb")

    async def lines() -> set[int]:
        return {b["line"] for b in await ok("get_debugger_breakpoints") if b["path"] == path}

    for _ in range(100):
        if await lines() == {a_line}:
            break
        await asyncio.sleep(0.05)
    assert await lines() == {a_line}
