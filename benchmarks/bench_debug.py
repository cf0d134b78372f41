"""The debugger through debug_session, beside a bare debug_request sequence, from one run.

Starts one real ``jupyter server`` with jupyter_mcp on a temporary folder holding a notebook
whose second cell calls a function of the first, with a breakpoint on the function's first
line. Then, on that notebook's kernel:

1. ours: ``debug_session`` over seed REST (keep-alive HTTP), ``run_cell`` → "stopped at the
   breakpoint" (the answer says where: the call includes syncing breakpoints, ``dumpCell``,
   the execution through the kernel runner and a ``stackTrace``), then ``step_over`` five times
   (each answers the new place), then ``continue`` to the end of the cell;
2. the reference: what JupyterLab's debugger sends, from a bare ``jupyter_client`` on the same
   kernel (after our session ended, so the two never share it): ``dumpCell`` +
   ``setBreakpoints``, ``execute_request`` → the ``stopped`` event + ``stackTrace``, then
   ``next`` → ``stopped`` + ``stackTrace`` five times, then ``continue`` until the cell's reply.

Figures are wall-clock on whatever machine runs this; on a shared, busy machine they are
noisy, so compare the rows of one run with each other.

    .venv/bin/python benchmarks/bench_debug.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import queue
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client import AsyncKernelClient
from jupyter_core.paths import jupyter_runtime_dir

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _server import jupyter_server, percentiles  # noqa: E402

from jupyter_mcp.documents.notebook_view import cell_marker_lines, notebook_view  # noqa: E402

DEFINE = (
    "def work(n):\n"
    "    total = 0\n"
    "    for i in range(n):\n"
    "        total += i\n"
    "    total *= 2\n"
    "    return total\n"
)
CALL = "result = work(3)\nresult\n"
STEPS = 5


def make_notebook(root: Path) -> int:
    """Write bench.ipynb; answer the view line of the function's first line."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_code_cell(DEFINE, id="define"),
        nbformat.v4.new_code_cell(CALL, id="call"),
    ]
    nbformat.write(nb, root / "bench.ipynb")
    markers = cell_marker_lines(nb, notebook_view(nb))
    assert markers is not None
    return markers[0] + 2


def ours(server: Any, rounds: int, line: int) -> tuple[list[float], list[float], str]:
    conn = server.connection()

    def debug(action: str, **arguments: Any) -> Any:
        return server.call(
            conn, "debug_session", action=action, pathInProject="bench.ipynb", **arguments
        )

    server.call(conn, "toggle_debugger_breakpoint", pathInProject="bench.ipynb", line=line)
    kernel_id = debug("start")["kernelId"]
    assert debug("run_cell", cellId="define")["state"] == "finished"
    stops: list[float] = []
    steps: list[float] = []
    for _ in range(rounds):
        t = time.perf_counter()
        answer = debug("run_cell", cellId="call")
        stops.append(time.perf_counter() - t)
        assert answer["state"] == "stopped" and answer["where"]["line"] == 1, answer
        for _ in range(STEPS):
            t = time.perf_counter()
            answer = debug("step_over")
            steps.append(time.perf_counter() - t)
            assert answer["state"] == "stopped", answer
        assert debug("continue")["state"] == "finished"
    debug("stop")
    conn.close()
    return stops, steps, kernel_id


class Bare:
    """A client of the kernel speaking the debugger's protocol as JupyterLab does."""

    def __init__(self, client: AsyncKernelClient) -> None:
        self.client = client
        self.seq = 0

    async def request(self, command: str, **arguments: Any) -> dict[str, Any]:
        self.seq += 1
        content = {"type": "request", "seq": self.seq, "command": command, "arguments": arguments}
        msg = self.client.session.msg("debug_request", content)
        self.client.control_channel.send(msg)
        while True:
            reply = await self.client.control_channel.get_msg(timeout=30)
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                body: dict[str, Any] = reply["content"]
                return body

    async def event(self, name: str) -> dict[str, Any]:
        while True:
            msg = await self.client.get_iopub_msg(timeout=30)
            if msg["msg_type"] == "debug_event" and msg["content"]["event"] == name:
                content: dict[str, Any] = msg["content"]
                return content

    async def idle_of(self, msg_id: str) -> None:
        while True:
            try:
                msg = await self.client.get_iopub_msg(timeout=30)
            except queue.Empty:
                raise RuntimeError("the cell did not finish") from None
            state = msg["content"].get("execution_state")
            if msg["parent_header"].get("msg_id") == msg_id and state == "idle":
                return

    async def drain(self) -> None:
        while True:
            try:
                await self.client.get_iopub_msg(timeout=0.05)
            except queue.Empty:
                return


async def reference(kernel_id: str, rounds: int) -> tuple[list[float], list[float]]:
    client = AsyncKernelClient()
    client.load_connection_file(str(Path(jupyter_runtime_dir()) / f"kernel-{kernel_id}.json"))
    client.start_channels()
    await client.wait_for_ready(timeout=60)
    bare = Bare(client)
    stops: list[float] = []
    steps: list[float] = []
    try:
        await bare.request("initialize", clientID="bench", adapterID="python", linesStartAt1=True)
        await bare.request("attach")
        await bare.request("configurationDone")
        for _ in range(rounds):
            await bare.drain()
            t = time.perf_counter()
            path = (await bare.request("dumpCell", code=DEFINE))["body"]["sourcePath"]
            await bare.request("setBreakpoints", source={"path": path}, breakpoints=[{"line": 2}])
            msg_id = client.execute(CALL)
            stopped = await bare.event("stopped")
            thread = stopped["body"]["threadId"]
            await bare.request("stackTrace", threadId=thread)
            stops.append(time.perf_counter() - t)
            for _ in range(STEPS):
                t = time.perf_counter()
                await bare.request("next", threadId=thread)
                await bare.event("stopped")
                await bare.request("stackTrace", threadId=thread)
                steps.append(time.perf_counter() - t)
            await bare.request("continue", threadId=thread)
            await bare.idle_of(msg_id)
        await bare.request("disconnect", restart=False, terminateDebuggee=False)
    finally:
        client.stop_channels()
    return stops, steps


def row(name: str, samples: list[float]) -> str:
    p50, p99 = percentiles(samples)
    return f"  {name:<46} p50 {p50:7.1f} ms   p99 {p99:7.1f} ms   (n={len(samples)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        line = make_notebook(root)
        with jupyter_server(root) as server:
            stops, steps, kernel_id = ours(server, args.rounds, line)
            ref_stops, ref_steps = asyncio.run(reference(kernel_id, args.rounds))
    print(f"debug_session on one warm ipykernel, {args.rounds} rounds of {STEPS} steps")
    print("run cell -> stopped at the breakpoint")
    print(row("ours: debug_session run_cell (seed REST)", stops))
    print(row("reference: bare debug_request sequence", ref_stops))
    print("one step -> stopped at the next line")
    print(row("ours: debug_session step_over (seed REST)", steps))
    print(row("reference: next + stopped + stackTrace", ref_steps))


if __name__ == "__main__":
    main()
