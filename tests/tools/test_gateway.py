"""Every kernel tool with the server's kernels behind a real Jupyter Kernel Gateway.

The test server is started as ``jupyter lab --gateway-url=… --GatewayClient.auth_token=…``
would be (``c.GatewayClient``), against a Kernel Gateway on loopback that requires a token
(see gateway_server); one test uses a gateway without one. That the code ran in a kernel the
gateway launched is read from the kernel itself: its parent process is the gateway, the
gateway lists its id, and this process (where the server runs) has no kernel of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from code_notebook import write_code_notebook
from gateway_server import KernelGateway, gateway_config, kernel_gateway
from jupyter_server.gateway.gateway_client import GatewayClient
from jupyter_server.gateway.managers import GatewayMappingKernelManager
from local_servers import free_port
from mcp import Client
from notebook_files import answer_of, error_of, on_disk
from process_table import descendants

from jupyter_mcp.documents.notebook_view import cell_marker_lines, notebook_view
from jupyter_mcp.kernels.managers import connected_client

pytestmark = pytest.mark.timeout(300)

#: A cell that says which process runs it and which launched it.
WHO = "import os\nprint(os.getpid(), os.getppid())"
#: A cell that prints for a minute.
TICKS = "import time\nfor i in range(600):\n    print('tick', i, flush=True)\n    time.sleep(.1)"


async def _ticking(client: Client, notebook: str) -> str:
    """Start running the TICKS cell of ``notebook`` in the background; its execution id once
    it printed."""
    started = await answer_of(
        client, "execute_notebook_cells", pathInProject=notebook, background=True
    )
    execution = str(started["executionId"])
    seen = await answer_of(client, "get_execution", executionId=execution, waitMs=1000)
    while not seen["cells"] or not seen["cells"][0]["outputs"]:
        seen = await answer_of(client, "get_execution", executionId=execution, waitMs=200)
    return execution


def _pids(answer: dict[str, Any], index: int = 0) -> tuple[int, int]:
    """The (pid, parent pid) a WHO cell printed."""
    pid, ppid = answer["cells"][index]["outputs"][0]["text"].split()
    return int(pid), int(ppid)


def _local_kernels(gateway: KernelGateway) -> list[int]:
    """Kernel processes started here (where the test server runs), not by the gateway (which
    this process started too)."""
    ours = set(descendants(os.getpid())) - set(descendants(gateway.pid)) - {gateway.pid}
    found = []
    for pid in sorted(ours):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"ipykernel" in cmdline:
            found.append(pid)
    return found


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelGateway]:
    """A Kernel Gateway that requires a token."""
    with kernel_gateway(tmp_path_factory.mktemp("gateway"), token=secrets.token_hex(16)) as gw:
        yield gw


@pytest.fixture(scope="module")
def open_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KernelGateway]:
    """A Kernel Gateway without a token (loopback only)."""
    with kernel_gateway(tmp_path_factory.mktemp("open-gateway"), token=None) as gw:
        yield gw


@pytest.fixture
def own_gateway(tmp_path: Path) -> Iterator[KernelGateway]:
    """A Kernel Gateway of the test's own (one the test may stop)."""
    with kernel_gateway(tmp_path / "own-gateway", token=secrets.token_hex(16)) as gw:
        yield gw


@pytest.fixture
def gateway_kind() -> str:
    """Which gateway the test server uses: "token" (default), "open", "own", "wrong-token"
    or "unreachable"; a test parametrizes it to choose another."""
    return "token"


@pytest.fixture
def served_by(gateway_kind: str, request: pytest.FixtureRequest) -> tuple[str, str | None]:
    """The gateway URL and token the test server is configured with."""
    if gateway_kind == "unreachable":
        return f"http://127.0.0.1:{free_port()}", "any-token"
    if gateway_kind in ("open", "own"):
        found: KernelGateway = request.getfixturevalue(f"{gateway_kind}_gateway")
        return found.url, found.token
    found = request.getfixturevalue("gateway")
    return found.url, ("not-the-token" if gateway_kind == "wrong-token" else found.token)


@pytest.fixture
def _fresh_gateway_client() -> Iterator[None]:
    # jupyter_server keeps the gateway's settings in a singleton and its kernels in a dict
    # of the class: neither may leak from one test server into the next.
    GatewayClient.clear_instance()
    yield
    GatewayClient.clear_instance()
    GatewayMappingKernelManager._kernels.clear()


@pytest.fixture
def jp_server_config(
    jp_server_config: dict[str, Any], served_by: tuple[str, str | None], _fresh_gateway_client: None
) -> dict[str, Any]:
    return {**jp_server_config, **gateway_config(*served_by)}


@pytest.mark.parametrize("collaboration", [False, True], ids=["file", "collaboration"])
async def test_cells_run_in_a_kernel_the_gateway_launched_and_every_question_reaches_it(
    connect: Any, jp_root_dir: Path, jp_serverapp: Any, gateway: KernelGateway, collaboration: bool
) -> None:
    path = write_code_notebook(
        jp_root_dir, "remote.ipynb", WHO, "x = 21 * 2\nx", "import collections", ids=True
    )
    async with connect() as client:
        # When the agent runs the notebook
        ran = await answer_of(client, "execute_notebook_cells", pathInProject="remote.ipynb")
        # Then its kernel is one the gateway launched, and none runs here
        assert ran["status"] == "ok", ran
        pid, ppid = _pids(ran)
        assert ppid == gateway.pid
        listed = await answer_of(client, "kernel_action", action="list")
        assert [k["notebooks"] for k in listed] == [["remote.ipynb"]]
        kernel_id = listed[0]["kernelId"]
        assert kernel_id in gateway.kernel_ids()
        assert listed[0]["state"] == "idle" and listed[0]["executionCount"] == 3
        assert _local_kernels(gateway) == []
        # And the outputs are in the notebook, as a user's run leaves them
        saved = await on_disk(path, lambda nb: nb.cells[2].execution_count == 3)
        assert saved.cells[1].outputs[0]["data"]["text/plain"] == "42"
        # And every question goes to that kernel
        snippet = await answer_of(
            client, "execute_code_in_kernel", pathInProject="remote.ipynb", code="x + 1"
        )
        assert snippet["status"] == "ok" and snippet["outputs"][0]["text"] == "43"
        variables = await answer_of(
            client, "get_kernel_variables", pathInProject="remote.ipynb", names=["x"]
        )
        assert [(v["name"], v["type"], v["value"]) for v in variables] == [("x", "int", "42")]
        await answer_of(
            client,
            "edit_notebook_cell",
            pathInProject="remote.ipynb",
            cellId="c2",
            source="collections.Ordered",
        )
        completed = await answer_of(
            client,
            "get_kernel_completions",
            pathInProject="remote.ipynb",
            cellId="c2",
            line=0,
            character=len("collections.Ordered"),
        )
        assert "OrderedDict" in [m.rpartition(".")[2] for m in completed["matches"]]
        cells = await answer_of(client, "get_notebook_cells", pathInProject="remote.ipynb")
        # (the gateway's word on the state, not the "starting" of its model at launch)
        assert cells["kernel"]["kernelId"] == kernel_id
        assert cells["kernel"]["state"] in ("idle", "busy")
        who = await answer_of(
            client, "execute_code_in_kernel", pathInProject="remote.ipynb", code=WHO
        )
        assert who["outputs"][0]["text"].split() == [str(pid), str(gateway.pid)]


async def test_a_background_run_is_followed_and_its_timeout_interrupts_the_gateways_kernel(
    connect: Any, jp_root_dir: Path
) -> None:
    path = write_code_notebook(jp_root_dir, "long.ipynb", TICKS, "print('after')", ids=True)
    async with connect() as client:
        # Given a long run started in the background, with a deadline
        started = await answer_of(
            client,
            "execute_notebook_cells",
            pathInProject="long.ipynb",
            background=True,
            timeoutMs=4000,
        )
        assert started["status"] == "running"
        # When the agent follows it up
        seen = await answer_of(client, "get_execution", executionId=started["executionId"])
        assert seen["status"] == "running"
        ended = await answer_of(
            client, "get_execution", executionId=started["executionId"], waitMs=120_000
        )
        # Then the deadline interrupted the kernel behind the gateway, with what ran kept
        assert ended["status"] == "timeout", ended
        outputs = ended["cells"][0]["outputs"]
        assert outputs[0]["text"].startswith("tick 0\n")
        assert outputs[-1]["ename"] == "KeyboardInterrupt"
        assert ended["notRun"] == ["c1"]
        # And the ticks streamed into the notebook as they came
        saved = await on_disk(path, lambda nb: nb.cells[0].execution_count is not None)
        assert saved.cells[0].outputs[-1]["ename"] == "KeyboardInterrupt"
        assert saved.cells[1].outputs == []
        # And the kernel answers at once: the interrupt stopped the loop
        after = await answer_of(
            client, "execute_code_in_kernel", pathInProject="long.ipynb", code="i", timeoutMs=20000
        )
        assert after["status"] == "ok" and int(after["outputs"][0]["text"]) < 600


async def test_kernel_actions_restart_change_and_shut_down_the_gateways_kernel(
    connect: Any, jp_root_dir: Path, gateway: KernelGateway
) -> None:
    write_code_notebook(jp_root_dir, "k.ipynb", WHO, "y = 1", ids=True)
    async with connect() as client:
        started = await answer_of(client, "kernel_action", action="start", pathInProject="k.ipynb")
        kernel_id = started["kernelId"]
        assert kernel_id in gateway.kernel_ids() and started["name"] == "python3"
        first = await answer_of(client, "execute_notebook_cells", pathInProject="k.ipynb")
        pid, ppid = _pids(first)
        assert ppid == gateway.pid
        # Restart: the same kernel id at the gateway, a new process, the variables gone
        restarted = await answer_of(
            client, "kernel_action", action="restart", pathInProject="k.ipynb"
        )
        assert restarted["kernelId"] == kernel_id and kernel_id in gateway.kernel_ids()
        assert "Not defined in the kernel of k.ipynb: y" in await error_of(
            client, "get_kernel_variables", pathInProject="k.ipynb", names=["y"]
        )
        again = await answer_of(client, "execute_notebook_cells", pathInProject="k.ipynb")
        assert again["cells"][0]["executionCount"] == 1
        new_pid, new_ppid = _pids(again)
        assert new_pid != pid and new_ppid == gateway.pid
        interrupted = await answer_of(
            client, "kernel_action", action="interrupt", pathInProject="k.ipynb"
        )
        assert interrupted["kernelId"] == kernel_id
        # Change: a new kernel of the gateway for the notebook's session; the old one ends
        changed = await answer_of(
            client, "kernel_action", action="change", pathInProject="k.ipynb", kernelName="python3"
        )
        assert changed["kernelId"] != kernel_id
        running = gateway.kernel_ids()
        assert changed["kernelId"] in running and kernel_id not in running
        listed = await answer_of(client, "kernel_action", action="list")
        assert [(k["kernelId"], k["notebooks"]) for k in listed] == [
            (changed["kernelId"], ["k.ipynb"])
        ]
        # Shutdown: the gateway's kernel ends with the session
        shut = await answer_of(client, "kernel_action", action="shutdown", pathInProject="k.ipynb")
        assert shut["state"] == "dead"
        assert changed["kernelId"] not in gateway.kernel_ids()
        assert await answer_of(client, "kernel_action", action="list") == []


async def test_the_debugger_of_a_gateway_kernel_stops_at_a_breakpoint(
    connect: Any, jp_root_dir: Path, gateway: KernelGateway
) -> None:
    define = "def average(values):\n    total = sum(values)\n    return total / len(values)"
    path = write_code_notebook(jp_root_dir, "debug.ipynb", define, "average([2, 4, 6])", ids=True)
    nb = nbformat.read(path, as_version=4)
    line = (cell_marker_lines(nb, notebook_view(nb)) or [])[0] + 3  # "return total / …"
    async with connect() as client:
        assert (
            await answer_of(
                client, "toggle_debugger_breakpoint", pathInProject="debug.ipynb", line=line
            )
            == "Breakpoint added"
        )
        # The debugger's requests go on the control channel, through the gateway's websocket
        started = await answer_of(
            client, "debug_session", action="start", pathInProject="debug.ipynb"
        )
        assert started["breakpoints"][0]["verified"] is True
        await answer_of(
            client, "execute_notebook_cells", pathInProject="debug.ipynb", cellIds=["c0"]
        )
        stopped = await answer_of(
            client, "debug_session", action="run_cell", pathInProject="debug.ipynb", cellId="c1"
        )
        assert stopped["state"] == "stopped", stopped
        assert stopped["where"]["cellId"] == "c0" and stopped["where"]["function"] == "average"
        found = await answer_of(
            client, "debug_session", action="variables", pathInProject="debug.ipynb"
        )
        values = {v["name"]: v["value"] for v in found["variables"]}
        assert values["total"] == "12" and values["values"] == "[2, 4, 6]"
        done = await answer_of(
            client, "debug_session", action="continue", pathInProject="debug.ipynb"
        )
        assert done["state"] == "finished" and done["outputs"][0]["text"] == "4.0"
        ended = await answer_of(client, "debug_session", action="stop", pathInProject="debug.ipynb")
        assert ended["session"] == "ended"


async def test_a_gateway_kernel_that_dies_mid_run_ends_the_run_and_the_next_run_gets_it_back(
    connect: Any, jp_root_dir: Path, gateway: KernelGateway
) -> None:
    # (a moment between the print and the end, for the output to leave the dying kernel)
    dies = "import os, time\nprint('going', flush=True)\ntime.sleep(1)\nos._exit(1)"
    write_code_notebook(jp_root_dir, "dies.ipynb", "x = 1", dies, "print('never')", ids=True)
    async with connect() as client:
        # When the kernel dies in the middle of the run (the gateway restarts it)
        died = await answer_of(client, "execute_notebook_cells", pathInProject="dies.ipynb")
        # Then the run ends at once, saying so, with what the cell printed
        assert died["status"] == "error" and died["cells"][1]["status"] == "died", died
        assert "The kernel died" in died["error"] and died["notRun"] == ["c2"]
        assert died["cells"][1]["outputs"][0]["text"] == "going\n"
        # And the next run is in the kernel the gateway restarted, whose variables are gone
        again = await answer_of(
            client,
            "execute_code_in_kernel",
            pathInProject="dies.ipynb",
            code=WHO + "\n'x' in dir()",
        )
        assert again["status"] == "ok", again
        printed, answered = (o["text"] for o in again["outputs"])
        assert printed.split()[1] == str(gateway.pid) and answered == "False"


async def test_a_run_configuration_runs_in_a_kernel_of_the_gateway(
    ok: Any, jp_root_dir: Path, gateway: KernelGateway
) -> None:
    write_code_notebook(jp_root_dir, "job.ipynb", WHO, "print('job done')", ids=True)
    await ok("run_configuration", configName="Run notebook job.ipynb")
    report = await ok("get_run_output", configName="Run notebook job.ipynb", waitMs=120_000)
    assert report["status"] == "succeeded", report
    pid, ppid = report["output"].split("\n")[1].split()
    assert int(ppid) == gateway.pid and "job done" in report["output"]
    # The run's kernel is ended with the run, at the gateway too
    assert report["kernelId"] not in gateway.kernel_ids()


async def test_code_analysis_warms_up_with_the_servers_interpreter(
    jp_serverapp: Any, mcp_app: Any, ok: Any, jp_root_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (jp_root_dir / "m.py").write_text("def helper(value):\n    return value\n")
    await jp_serverapp.extension_manager.start_extension("jupyter_mcp")
    await asyncio.wait_for(mcp_app._warm_task, 120)
    assert "warming up" not in caplog.text
    assert mcp_app.tool_context.services.code.current is not None
    symbols = await ok("get_symbols_in_file", pathInProject="m.py")
    assert "helper" in str(symbols)


@pytest.mark.parametrize("gateway_kind", ["open"])
async def test_a_gateway_without_a_token_serves_the_kernel_tools_too(
    connect: Any, jp_root_dir: Path, open_gateway: KernelGateway
) -> None:
    write_code_notebook(jp_root_dir, "open.ipynb", WHO, "6 * 7", ids=True)
    async with connect() as client:
        ran = await answer_of(client, "execute_notebook_cells", pathInProject="open.ipynb")
        assert ran["status"] == "ok" and ran["cells"][1]["outputs"][0]["text"] == "42"
        assert _pids(ran)[1] == open_gateway.pid
        listed = await answer_of(client, "kernel_action", action="list")
        assert [k["kernelId"] for k in listed] == sorted(open_gateway.kernel_ids())


async def test_a_notebook_of_a_kernel_the_gateway_lacks_is_refused_naming_the_gateways_kernels(
    connect: Any, jp_root_dir: Path, gateway: KernelGateway
) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "julia-1.10", "display_name": "Julia 1.10"}
    nb.metadata["language_info"] = {"name": "julia"}
    nb.cells = [nbformat.v4.new_code_cell("println(sum([1, 2, 3]))", id="j0")]
    path = jp_root_dir / "model.ipynb"
    path.write_text(nbformat.writes(nb))
    before = path.read_bytes()
    gateways = set(gateway.api("kernelspecs")["kernelspecs"])
    async with connect() as client:
        message = await error_of(client, "execute_notebook_cells", pathInProject="model.ipynb")
        assert await answer_of(client, "kernel_action", action="list") == []
    # The kernels named are the gateway's, and nothing was started there or written here
    assert "model.ipynb asks for the kernel 'julia-1.10' (Julia 1.10)" in message, message
    named = message.split("The server's kernels: ", 1)[1].split(". Nothing was run")[0]
    assert {entry.split(" (")[0] for entry in named.split(", ")} == gateways
    assert gateway.kernel_ids() == set()
    assert path.read_bytes() == before


@pytest.mark.parametrize("gateway_kind", ["unreachable", "wrong-token"])
async def test_a_gateway_that_cannot_be_used_is_a_clear_error_and_nothing_changes(
    connect: Any, jp_root_dir: Path, gateway_kind: str, served_by: tuple[str, str | None]
) -> None:
    path = write_code_notebook(jp_root_dir, "n.ipynb", "x = 1", ids=True)
    before = path.read_bytes()
    async with connect() as client:
        ran = await error_of(client, "execute_notebook_cells", pathInProject="n.ipynb")
        listed = await error_of(client, "kernel_action", action="list")
        started = await error_of(client, "kernel_action", action="start", pathInProject="n.ipynb")
        # The file and cell tools go on working
        cells = await answer_of(client, "get_notebook_cells", pathInProject="n.ipynb")
    assert cells["kernel"] is None and cells["cells"][0]["source"] == "x = 1"
    for message in (ran, listed, started):
        assert "failed unexpectedly" not in message
        if gateway_kind == "unreachable":
            assert served_by[0] in message and "Gateway instance is running" in message
        else:
            assert "Unauthorized" in message or "401" in message, message
    assert path.read_bytes() == before


@pytest.mark.parametrize("gateway_kind", ["own"])
async def test_a_gateway_that_goes_away_mid_run_ends_the_run_with_a_clear_error(
    connect: Any, jp_root_dir: Path, jp_serverapp: Any, own_gateway: KernelGateway
) -> None:
    path = write_code_notebook(jp_root_dir, "away.ipynb", TICKS, ids=True)
    async with connect() as client:
        execution = await _ticking(client, "away.ipynb")
        # When the gateway's process is killed, kernels and all
        kernels = descendants(own_gateway.pid)
        own_gateway.process.kill()
        own_gateway.process.wait()
        for pid in kernels:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        # Then the run ends with what it had, long before its two minutes
        ended = await answer_of(client, "get_execution", executionId=execution, waitMs=60_000)
        assert ended["status"] == "error", ended
        assert "The connection to the kernel closed" in ended["error"]
        assert ended["cells"][0]["outputs"][0]["text"].startswith("tick 0\n")
        # And what needs the gateway says it is not there, at once
        again = await answer_of(client, "execute_notebook_cells", pathInProject="away.ipynb")
        assert again["status"] == "error" and again["cells"] == [], again
        assert "cannot be reached" in again["error"] and own_gateway.url in again["error"]
    saved = await on_disk(path, lambda nb: nb.cells[0].outputs)
    assert saved.cells[0].outputs[0]["text"].startswith("tick 0\n")
    # The notebook's session outlives the gateway, and ending it would ask the gateway to
    # end its kernel: the server forgets it.
    jp_serverapp.session_manager.cursor.execute("DELETE FROM session")


async def test_a_restart_in_the_middle_of_a_run_ends_the_run_at_once(
    connect: Any, jp_root_dir: Path
) -> None:
    write_code_notebook(jp_root_dir, "restart.ipynb", TICKS, ids=True)
    async with connect() as client:
        execution = await _ticking(client, "restart.ipynb")
        # When the kernel is restarted while the cell runs (a restart the gateway does not
        # announce on the kernel's channels, as JupyterLab's restart button would ask for it)
        await answer_of(client, "kernel_action", action="restart", pathInProject="restart.ipynb")
        # Then the run is over, not waiting for a cell the old kernel took with it: the
        # restart interrupted the cell and its answer came (Enterprise Gateway), or it was lost
        # with the old kernel (Kernel Gateway)
        ended = await answer_of(client, "get_execution", executionId=execution, waitMs=30_000)
        assert ended["status"] in ("error", "interrupted"), ended
        assert ended["cells"][0]["status"] in ("died", "interrupted")
        assert ended["cells"][0]["outputs"][0]["text"].startswith("tick 0\n")
        after = await answer_of(
            client, "execute_code_in_kernel", pathInProject="restart.ipynb", code="1"
        )
        assert after["status"] == "ok"


async def test_a_gateway_kernel_busy_with_another_clients_cell_is_a_progress_indicator(
    connect: Any, jp_root_dir: Path, jp_serverapp: Any
) -> None:
    write_code_notebook(jp_root_dir, "busy.ipynb", "1", ids=True)
    async with connect() as client:
        kernel = await answer_of(
            client, "kernel_action", action="start", pathInProject="busy.ipynb"
        )
        # Given a cell of another client's (the user's JupyterLab, say) running in the kernel,
        # which only the gateway sees
        async with connected_client(jp_serverapp, kernel["kernelId"]) as user:
            user.execute("import time; time.sleep(60)")
            # Then the progress indicators show the kernel busy, as the gateway says it is
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while not [
                i
                for i in await answer_of(client, "get_progress_indicators")
                if i.get("kernelId") == kernel["kernelId"] and "busy.ipynb" in i["title"]
            ]:
                assert loop.time() < deadline, "the busy kernel was never shown"
                await asyncio.sleep(0.2)
            await answer_of(client, "kernel_action", action="interrupt", pathInProject="busy.ipynb")
