"""debug_session: the agent drives a notebook kernel's debugger (real ipykernel + debugpy).

Each test starts a notebook session's kernel on pytest-jupyter's server and talks to it through
the tool, as an agent would over seed REST.
"""

from __future__ import annotations

import asyncio
import os
import queue
import signal
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_mcp.documents.notebook_view import cell_marker_lines, notebook_view
from jupyter_mcp.kernels import debugger
from jupyter_mcp.kernels.managers import new_client

pytestmark = pytest.mark.timeout(240)

CELLS = {
    "define": (
        "def scale(values, factor):\n"
        "    total = 0\n"
        "    for v in values:\n"
        "        total += v * factor\n"
        "    return total\n"
    ),
    "call": 'data = [1, 2, 3]\nresult = scale(data, 2)\nprint("result", result)\nresult\n',
    "boom": "def fail(x):\n    y = x + 1\n    return y / 0\n\nfail(1)\n",
    "slow": "import time\ntime.sleep(4)\ndone = True\n",
    "loop": "import time\nn = 0\nwhile n < 150:\n    n += 1\n    time.sleep(0.05)\n",
    "big": 'big = list(range(1000))\ntext = "x" * 5000\nstop_here = 1\n',
    "module": "import helper\nhelper.double(4)\n",
}


def view_line(root: Path, cell_id: str, line: int) -> int:
    """The percent-view line (1-based) of 1-based ``line`` of cell ``cell_id``."""
    nb = nbformat.read(root / "nb.ipynb", as_version=4)
    markers = cell_marker_lines(nb, notebook_view(nb))
    assert markers is not None
    index = [c.id for c in nb.cells].index(cell_id)
    return markers[index] + line


@pytest.fixture
def notebook(jp_root_dir: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for cell_id, source in CELLS.items():
        cell = nbformat.v4.new_code_cell(source)
        cell.id = cell_id
        nb.cells.append(cell)
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("# Between", id="text"))
    path = jp_root_dir / "nb.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.fixture
def debug(ok: Any, fails: Any, notebook: Path) -> Any:
    """``await debug(action, **arguments)`` on nb.ipynb, ``await debug.refused(…)`` for the
    error of a call that must fail. The server's teardown ends sessions and kernels."""

    async def _debug(action: str, **arguments: Any) -> Any:
        return await ok("debug_session", action=action, pathInProject="nb.ipynb", **arguments)

    async def _refused(action: str, **arguments: Any) -> str:
        return str(
            await fails("debug_session", action=action, pathInProject="nb.ipynb", **arguments)
        )

    _debug.refused = _refused  # type: ignore[attr-defined]
    return _debug


async def test_a_breakpoint_in_a_function_stops_there_with_its_frame_and_locals(
    debug: Any, ok: Any, jp_root_dir: Path
) -> None:
    # Given a breakpoint on the loop body of a function defined in one cell
    line = view_line(jp_root_dir, "define", 4)
    assert await ok("toggle_debugger_breakpoint", pathInProject="nb.ipynb", line=line)
    started = await debug("start")
    assert started["session"] == "on" and started["shared"] is False
    assert started["breakpoints"] == [
        {"cellId": "define", "line": 3, "viewLine": line, "verified": True}
    ]
    assert (await debug("run_cell", cellId="define"))["state"] == "finished"

    # When the cell that calls it runs under the debugger
    stopped = await debug("run_cell", cellId="call")

    # Then it stops in the function, at that line, for the breakpoint
    assert stopped["state"] == "stopped"
    assert stopped["cellId"] == "call"
    where = stopped["where"]
    assert where["cellId"] == "define" and where["line"] == 3 and where["viewLine"] == line
    assert where["reason"] == "breakpoint" and where["function"] == "scale"
    assert where["code"].strip() == "total += v * factor"
    # with the caller below it on the stack
    stack = await debug("stack")
    frames = stack["frames"]
    assert [(f["function"], f.get("cellId"), f["line"]) for f in frames] == [
        ("scale", "define", 3),
        ("<module>", "call", 1),
    ]
    # and the function's locals
    found = await debug("variables")
    assert found["scope"] == "Locals" and found["frameId"] == frames[0]["frameId"]
    values = {v["name"]: v["value"] for v in found["variables"]}
    assert values["factor"] == "2" and values["total"] == "0" and values["v"] == "1"
    assert values["values"] == "[1, 2, 3]"
    # the caller's frame has its own
    caller = await debug("variables", frameId=frames[1]["frameId"])
    assert {v["name"] for v in caller["variables"]} >= {"data", "scale"}
    # evaluate sees the frame's locals
    assert (await debug("evaluate", expression="total + v * factor"))["result"] == "2"
    assert (await debug("evaluate", expression="len(data)", frameId=frames[1]["frameId"]))[
        "result"
    ] == "3"

    # When it continues, it stops at the same breakpoint on the next iteration …
    again = await debug("continue")
    assert again["where"]["line"] == 3
    assert {v["name"]: v["value"] for v in (await debug("variables"))["variables"]}["v"] == "2"
    # … and with the breakpoint removed, it finishes with the cell's outputs
    assert await ok("toggle_debugger_breakpoint", pathInProject="nb.ipynb", line=line)
    await asyncio.sleep(0.5)  # the store's change reaches the kernel in the background
    assert (await debug("state"))["breakpoints"] == []
    done = await debug("continue")
    assert done["state"] == "finished" and done["status"] == "ok" and done["cellId"] == "call"
    assert [o["text"] for o in done["outputs"]] == ["result 12\n", "12"]
    assert isinstance(done["executionCount"], int)
    # and the notebook shows the run as if the user had made it
    cell = await saved_cell(jp_root_dir, "call", done["executionCount"])
    # right away, the next cell runs (the finished cell is not taken for a stopped one)
    assert (await debug("run_cell", cellId="call"))["state"] == "finished"
    assert [o.get("text") or o["data"]["text/plain"] for o in cell.outputs] == ["result 12\n", "12"]


async def saved_cell(root: Path, cell_id: str, count: int) -> Any:
    """The cell as the notebook file has it once its run's count is written."""
    for _ in range(50):
        nb = nbformat.read(root / "nb.ipynb", as_version=4)
        cell = next(c for c in nb.cells if c.id == cell_id)
        if cell.execution_count == count:
            return cell
        await asyncio.sleep(0.1)
    raise AssertionError(f"cell {cell_id} was not saved with count {count}")


async def test_steps_land_where_expected(debug: Any, ok: Any, jp_root_dir: Path) -> None:
    # Given a breakpoint on the call of the function
    await ok(
        "toggle_debugger_breakpoint",
        pathInProject="nb.ipynb",
        line=view_line(jp_root_dir, "call", 2),
    )
    await debug("start")
    await debug("run_cell", cellId="define")
    stopped = await debug("run_cell", index=2)  # the markdown cell counts: "call" is index 2
    assert (stopped["where"]["cellId"], stopped["where"]["line"]) == ("call", 1)

    # step into enters the function at its first line
    into = await debug("step_into")
    assert into["state"] == "stopped" and into["where"]["reason"] == "step"
    assert (into["where"]["cellId"], into["where"]["line"], into["where"]["function"]) == (
        "define",
        1,
        "scale",
    )
    # step over goes to the next line of the same function
    over = await debug("step_over")
    assert (over["where"]["cellId"], over["where"]["line"]) == ("define", 2)
    # step out returns to the caller's line
    out = await debug("step_out")
    assert (out["where"]["cellId"], out["where"]["line"]) == ("call", 1)
    over = await debug("step_over")
    assert (over["where"]["cellId"], over["where"]["line"]) == ("call", 2)
    # stepping past the cell's end finishes it
    await debug("step_over")
    done = await debug("step_over")
    assert done["state"] == "finished" and done["outputs"][0]["text"] == "result 12\n"

    # The step that ran off the cell does not stop the next cell in the kernel's own code
    await ok(
        "toggle_debugger_breakpoint",
        pathInProject="nb.ipynb",
        line=view_line(jp_root_dir, "call", 2),
    )
    rerun = await debug("run_cell", cellId="call")
    assert rerun["state"] == "finished" and rerun["status"] == "ok"


async def test_an_exception_stops_when_asked(debug: Any) -> None:
    # Without the option, the failing cell just fails
    await debug("start")
    failed = await debug("run_cell", cellId="boom")
    assert failed["state"] == "finished", failed
    assert failed["state"] == "finished" and failed["status"] == "error"
    assert failed["outputs"][-1]["ename"] == "ZeroDivisionError"

    # With it, the cell stops where the exception is raised, with the frame's locals
    again = await debug("start", exceptions="raised")
    assert again["alreadyStarted"] is True and again["exceptions"] == "raised"
    stopped = await debug("run_cell", cellId="boom", timeoutMs=120_000)
    assert stopped["state"] == "stopped"
    where = stopped["where"]
    assert where["reason"] == "exception" and "ZeroDivisionError" in where["exception"]
    assert (where["cellId"], where["line"], where["function"]) == ("boom", 2, "fail")
    assert {v["name"]: v["value"] for v in (await debug("variables"))["variables"]}["y"] == "2"
    # It stops again as the exception leaves each of the notebook's frames (not in the
    # libraries the kernel uses); in the end the cell fails. (Stopping on raised exceptions
    # makes debugpy check every raise in IPython's own frames: slow on a loaded machine, so
    # each continue may wait longer than the 30 s default.)
    answer = await debug("continue", timeoutMs=120_000)
    for _ in range(3):
        if answer["state"] != "stopped":
            break
        assert answer["where"]["cellId"] == "boom"
        answer = await debug("continue", timeoutMs=120_000)
    assert answer["state"] == "finished" and answer["status"] == "error"


async def test_a_long_cell_times_out_into_running_and_pause_stops_it(debug: Any) -> None:
    await debug("start")
    # A cell that runs longer than the wait answers "running", not an error
    running = await debug("run_cell", cellId="loop", timeoutMs=1000)
    assert running["state"] == "running" and running["cellId"] == "loop"
    assert "pause" in running["message"]
    assert (await debug("state"))["running"] is True
    # Nothing is stopped, so there is nothing to step
    step = await debug.refused("step_over")
    assert "Nothing is stopped" in step
    # pause stops it where it is
    paused = await debug("pause")
    assert paused["state"] == "stopped" and paused["where"]["reason"] == "pause"
    assert paused["where"]["cellId"] == "loop" and paused["where"]["line"] in (2, 3, 4)
    assert (await debug("evaluate", expression="0 < n < 150"))["result"] == "True"
    # stop resumes it and ends the session
    ended = await debug("stop")
    assert ended["session"] == "ended" and ended["resumed"] is True
    assert await debug("state") == {"session": "off", "ended": "the session was stopped"}
    assert "No debug session on nb.ipynb" in await debug.refused("pause")


async def test_a_step_that_does_not_return_in_time_is_an_error_and_the_session_goes_on(
    debug: Any, ok: Any, jp_root_dir: Path
) -> None:
    line = view_line(jp_root_dir, "slow", 2)
    await ok("toggle_debugger_breakpoint", pathInProject="nb.ipynb", line=line)
    await debug("start")
    stopped = await debug("run_cell", cellId="slow")
    assert stopped["where"]["line"] == 1
    # Stepping over a four-second call with a one-second wait fails clearly …
    message = await debug.refused("step_over", timeoutMs=1000)
    assert "step_over did not stop within 1 s" in message and "still on" in message
    state = await debug("state")
    assert state["session"] == "on" and state["running"] is True
    # … and the session is still usable: waiting again finds the step done
    landed = await debug("continue", timeoutMs=20000)
    assert landed["state"] == "stopped" and landed["where"]["line"] == 2
    done = await debug("continue")
    assert done["state"] == "finished" and done["status"] == "ok"


async def test_stopping_resumes_the_stopped_cell_and_turns_the_debugger_off(
    debug: Any, ok: Any, jp_root_dir: Path
) -> None:
    await ok(
        "toggle_debugger_breakpoint",
        pathInProject="nb.ipynb",
        line=view_line(jp_root_dir, "define", 4),
    )
    await debug("start")
    await debug("run_cell", cellId="define")
    assert (await debug("run_cell", cellId="call"))["state"] == "stopped"
    ended = await debug("stop")
    # The paused cell ran to its end, its outputs are in the answer
    assert ended["resumed"] is True
    assert ended["run"]["state"] == "finished" and ended["run"]["status"] == "ok"
    assert ended["run"]["outputs"][0]["text"] == "result 12\n"
    # The kernel's debugger is off: a new session starts it afresh (not shared)
    again = await debug("start")
    assert again["shared"] is False


async def test_a_kernel_restart_or_death_ends_the_session(
    debug: Any, ok: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    await ok(
        "toggle_debugger_breakpoint",
        pathInProject="nb.ipynb",
        line=view_line(jp_root_dir, "define", 4),
    )
    started = await debug("start")
    await debug("run_cell", cellId="define")
    assert (await debug("run_cell", cellId="call"))["state"] == "stopped"
    kernels = jp_serverapp.kernel_manager

    # A restart while stopped ends the session; nothing is left paused
    await kernels.restart_kernel(started["kernelId"])
    state = await debug("state")
    assert state["session"] == "off" and "restarted" in state["ended"]
    message = await debug.refused("stack")
    assert "the last one ended: the kernel" in message and "action 'start'" in message

    # A new session on the restarted kernel works; the kernel dying ends it too
    assert (await debug("start"))["session"] == "on"
    assert (await debug("run_cell", cellId="define"))["state"] == "finished"
    os.kill(kernels.get_kernel(started["kernelId"]).provisioner.pid, signal.SIGKILL)
    await asyncio.sleep(1)
    message = await debug.refused("run_cell", cellId="call")
    # (the server may have restarted the dead kernel by then)
    assert "ended: the kernel" in message
    assert "died" in message or "restarted" in message


async def test_refusals_are_clear(debug: Any, call: Any, jp_root_dir: Path) -> None:
    (jp_root_dir / "a.py").write_text("x = 1\n")
    answer = await call("debug_session", action="start", pathInProject="a.py")
    assert "a.py is not a notebook" in answer["error"]
    assert "No debug session on nb.ipynb" in await debug.refused("run_cell", cellId="call")
    await debug("start")
    assert "has no cell with id 'nope'" in await debug.refused("run_cell", cellId="nope")
    assert "markdown cell; only code runs" in await debug.refused("run_cell", cellId="text")
    assert "needs the cell" in await debug.refused("run_cell")
    assert "not stopped" in await debug.refused("variables")
    assert "needs an 'expression'" in await debug.refused("evaluate")


async def test_the_users_jupyterlab_debugger_is_shared(
    debug: Any, ok: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    # Given the user's JupyterLab debugger on the notebook's kernel (the requests JupyterLab
    # sends when the bug button is switched on)
    line = view_line(jp_root_dir, "define", 4)
    await ok("toggle_debugger_breakpoint", pathInProject="nb.ipynb", line=line)
    session = await jp_serverapp.session_manager.create_session(
        path="nb.ipynb", name="nb.ipynb", type="notebook", kernel_name="python3"
    )
    # JupyterLab's kernel connection has a session (zmq identity) of its own
    user = new_client(
        jp_serverapp.kernel_manager.get_kernel(session["kernel"]["id"]), own_session=True
    )
    user.start_channels()
    try:
        await user.wait_for_ready(timeout=60)
        await lab_request(user, "initialize", clientID="jupyterlab", adapterID="python")
        await lab_request(user, "attach")

        # When the agent starts its session, it joins the user's instead of starting another
        started = await debug("start")
        assert started["shared"] is True and "the user is debugging" in started["message"]
        await debug("run_cell", cellId="define")
        stopped = await debug("run_cell", cellId="call")
        assert stopped["where"]["cellId"] == "define"

        # Then the user's debugger hears where the agent stopped and sees it stopped
        event = await wait_for_event(user, "stopped")
        assert event["body"]["reason"] == "breakpoint"
        info = await lab_request(user, "debugInfo")
        assert info["body"]["isStarted"] is True and info["body"]["stoppedThreads"]
        trace = await lab_request(user, "stackTrace", threadId=event["body"]["threadId"])
        assert trace["body"]["stackFrames"][0]["name"] == "scale"

        # Stopping the agent's session resumes its cell and leaves the user's debugger on
        ended = await debug("stop")
        assert ended["resumed"] is True and "stays on" in ended["message"]
        # (the user's breakpoint stops the loop twice more; the agent's cell is let go on)
        assert ended["run"]["state"] == "finished" and ended["run"]["status"] == "ok"
        # ipykernel forgets a stopped thread when debugpy's "continued" event reaches it, which
        # can come a moment after the cell's end on a loaded machine: ask until it has.
        for _ in range(100):
            info = await lab_request(user, "debugInfo")
            if info["body"]["stoppedThreads"] == []:
                break
            await asyncio.sleep(0.1)
        assert info["body"]["isStarted"] is True and info["body"]["stoppedThreads"] == []
    finally:
        user.stop_channels()


_seq = 1000


async def lab_request(client: Any, command: str, **arguments: Any) -> dict[str, Any]:
    """A debug_request as JupyterLab's debugger sends it, and its reply."""
    global _seq
    _seq += 1
    msg = client.session.msg(
        "debug_request",
        {"type": "request", "seq": _seq, "command": command, "arguments": arguments},
    )
    client.control_channel.send(msg)
    while True:
        reply = await client.control_channel.get_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            content: dict[str, Any] = reply["content"]
            return content


async def wait_for_event(client: Any, name: str) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while loop.time() < deadline:
        try:
            msg = await client.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if msg["msg_type"] == "debug_event" and msg["content"]["event"] == name:
            content: dict[str, Any] = msg["content"]
            return content
    raise AssertionError(f"no {name} debug_event within 30 s")


async def test_a_session_left_stopped_is_ended_and_its_cell_goes_on(
    debug: Any, ok: Any, jp_root_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(debugger, "IDLE_LIMIT", 2.0)
    line = view_line(jp_root_dir, "define", 4)
    await ok("toggle_debugger_breakpoint", pathInProject="nb.ipynb", line=line)
    await debug("start")
    await debug("run_cell", cellId="define")
    stopped = await debug("run_cell", cellId="call")
    assert stopped["state"] == "stopped"
    # Given an agent that makes no call while its cell is stopped, the session ends by itself
    await asyncio.sleep(6)
    state = await debug("state")
    assert state == {"session": "off", "ended": "it stayed stopped with no call for 2 s"}
    # and the cell was let go on to its end
    for _ in range(50):
        nb = nbformat.read(jp_root_dir / "nb.ipynb", as_version=4)
        outputs = next(c for c in nb.cells if c.id == "call").outputs
        if outputs:
            break
        await asyncio.sleep(0.1)
    assert outputs[0]["text"] == "result 12\n"


async def test_variables_are_paged_and_long_values_cut(
    debug: Any, ok: Any, jp_root_dir: Path
) -> None:
    await ok(
        "toggle_debugger_breakpoint",
        pathInProject="nb.ipynb",
        line=view_line(jp_root_dir, "big", 3),
    )
    await debug("start")
    assert (await debug("run_cell", cellId="big"))["state"] == "stopped"
    found = await debug("variables", count=200)
    by_name = {v["name"]: v for v in found["variables"]}
    # A long value is cut, and says how long it is
    assert by_name["text"]["valueLength"] == 5002 and len(by_name["text"]["value"]) < 400
    assert "characters cut" in by_name["text"]["value"]
    # A container expands by its reference, a page at a time
    reference = by_name["big"]["variablesReference"]
    page = await debug("variables", variablesReference=reference, start=10, count=5)
    items = page["variables"]
    assert page["start"] == 10 and page["more"] is True and len(items) == 5
    assert page["total"] > 15
    first = await debug("variables", variablesReference=reference, count=200)
    assert [v["value"] for v in first["variables"]][10:15] == [v["value"] for v in items]
    assert (await debug("continue"))["state"] == "finished"


async def test_a_breakpoint_in_a_project_module_the_notebook_imports(
    debug: Any, ok: Any, jp_root_dir: Path
) -> None:
    (jp_root_dir / "helper.py").write_text("def double(x):\n    y = x * 2\n    return y\n")
    await ok("toggle_debugger_breakpoint", pathInProject="helper.py", line=2)
    started = await debug("start")
    assert {"file": "helper.py", "fileLine": 2, "verified": True} in started["breakpoints"]
    stopped = await debug("run_cell", cellId="module")
    assert stopped["where"] == {
        "function": "double",
        "file": "helper.py",
        "fileLine": 2,
        "reason": "breakpoint",
    }
    assert {v["name"]: v["value"] for v in (await debug("variables"))["variables"]}["x"] == "4"
    frames = (await debug("stack"))["frames"]
    assert [f.get("cellId") for f in frames] == [None, "module"]
    done = await debug("continue")
    assert done["state"] == "finished" and done["outputs"][0]["text"] == "8"
