"""Running a cell and reading a notebook over MCP, next to their references, from one run.

Starts one real ``jupyter server`` with jupyter_mcp and jupyter-collaboration (token auth) on a
temporary folder, and datalayer's ``jupyter-mcp-server`` 2.2.4 (the peer users compare us with)
connected to that same server. Then, with the official SDK client on each MCP endpoint:

1. ``1+1`` in a warm kernel: our ``execute_code_in_kernel`` and ``execute_notebook_cells``
   (a one-cell notebook, outputs written into it) against a bare ``jupyter_client`` round trip
   (execute request → idle + reply) on the same kernel. Target: p50 overhead ≤ 10 ms.
2. The same cell through the peer's ``execute_cell`` (same notebook, same session kernel).
   Target: ours ≤ 0.5× its p50.
3. Reading a 100-cell notebook with outputs: our ``get_notebook_cells`` (outputs included,
   every result window read, as an agent reads the whole answer) against the peer's
   ``read_notebook`` (``detailed``, which gives sources, not outputs, in one answer). Target:
   ours ≤ 0.5× its p50. Ours with sources only is printed beside it.

The peer needs its own environment: the script makes ``.cache/bench-venv`` on first use
(``python -m venv``; ``pip install jupyter-mcp-server==2.2.4``, which brings jupyter-server
and jupyter-collaboration, plus jupyter_mcp's own dependencies) and runs the Jupyter server
from it with this checkout on ``PYTHONPATH``, so both MCP servers talk to one server.

Figures are wall-clock on whatever machine runs this; on a shared, busy machine they are
noisy, so compare the rows of one run with each other.

    .venv/bin/python benchmarks/bench_kernels.py [--calls 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import nbformat
import tomllib
from jupyter_client import AsyncKernelClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parent.parent
VENV = REPO / ".cache" / "bench-venv"
PEER = "jupyter-mcp-server==2.2.4"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def venv_python() -> Path:
    """The peer's environment, made on first use."""
    python = VENV / "bin" / "python"
    marker = VENV / ".ready"
    if marker.exists():
        return python
    print(f"Setting up {VENV} ({PEER} and jupyter_mcp's dependencies) …", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    ours = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    subprocess.run([str(python), "-m", "pip", "install", "-q", PEER, *ours], check=True)
    marker.write_text(PEER + "\n")
    return python


def wait_for(
    url: str, headers: dict[str, str], process: subprocess.Popen[bytes], log: Path
) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=2).read()
            return
        except urllib.error.HTTPError:
            return  # it answers (an MCP endpoint refuses a bare GET)
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                tail = log.read_text(errors="replace")[-3000:]
                raise SystemExit(f"{url} did not come up:\n{tail}") from None
            time.sleep(0.3)


def start_jupyter(python: Path, root: Path, home: Path, token: str) -> tuple[Any, str]:
    port = free_port()
    config = {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_mcp": True},
            "ip": "127.0.0.1",
            "port": port,
            "port_retries": 0,
            "open_browser": False,
            "root_dir": str(root),
        },
        "IdentityProvider": {"token": token},
    }
    (home / "config.json").write_text(json.dumps(config))
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_DATA_DIR": str(home / "data"),
    }
    log = home / "server.log"
    process = subprocess.Popen(
        [str(python), "-m", "jupyter_server", f"--config={home / 'config.json'}", "--allow-root"],
        cwd=home,
        env=env,
        stdout=open(log, "wb"),  # noqa: SIM115 - lives as long as the server
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    wait_for(base + "/api/status", {"Authorization": f"token {token}"}, process, log)
    return process, base


def start_peer(home: Path, jupyter: str, token: str, mcp_token: str) -> tuple[Any, str]:
    port = free_port()
    log = home / "peer.log"
    process = subprocess.Popen(
        [
            str(VENV / "bin" / "jupyter-mcp-server"),
            "start",
            "--transport",
            "streamable-http",
            "--port",
            str(port),
            "--jupyter-url",
            jupyter,
            "--jupyter-token",
            token,
            "--mcp-token",
            mcp_token,
            "--start-new-code-sandbox",
            "false",
        ],
        cwd=home,
        stdout=open(log, "wb"),  # noqa: SIM115 - lives as long as the peer
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    wait_for(url, {"Authorization": f"Bearer {mcp_token}"}, process, log)
    return process, url


def notebooks(root: Path) -> None:
    one = nbformat.v4.new_notebook()
    one.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    one.cells = [nbformat.v4.new_code_cell("1+1", id="one")]
    nbformat.write(one, root / "one.ipynb")
    big = nbformat.v4.new_notebook()
    big.metadata["kernelspec"] = one.metadata["kernelspec"]
    for i in range(100):
        cell = nbformat.v4.new_code_cell(f"# cell {i}\nfor j in range(5):\n    print({i}, j)\n{i}")
        cell.execution_count = i + 1
        cell.outputs = [
            nbformat.v4.new_output(
                "stream", name="stdout", text="".join(f"{i} {j}\n" for j in range(5))
            ),
            nbformat.v4.new_output(
                "execute_result", data={"text/plain": str(i)}, execution_count=i + 1
            ),
        ]
        big.cells.append(cell)
    nbformat.write(big, root / "big.ipynb")


async def timed(call: Callable[[], Awaitable[None]], calls: int, warmup: int = 5) -> list[float]:
    for _ in range(warmup):
        await call()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ok(result: Any) -> str:
    text = result.content[0].text if result.content else ""
    assert not result.is_error, text
    return str(text)


async def bare_round_trip(connection_file: Path, calls: int) -> list[float]:
    client = AsyncKernelClient()
    client.load_connection_file(str(connection_file))
    client.start_channels()
    await client.wait_for_ready(timeout=60)

    async def once() -> None:
        msg_id = client.execute("1+1", store_history=False)
        idle = False
        while not idle:
            msg = await client.get_iopub_msg(timeout=30)
            idle = (
                msg["parent_header"].get("msg_id") == msg_id
                and msg["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"
            )
        while (await client.get_shell_msg(timeout=30))["parent_header"].get("msg_id") != msg_id:
            pass

    try:
        return await timed(once, calls)
    finally:
        client.stop_channels()


async def measure(
    base: str, token: str, peer: str, mcp_token: str, runtime: Path, calls: int
) -> dict[str, list[float]]:
    rows: dict[str, list[float]] = {}
    async with httpx2.AsyncClient(headers={"Authorization": f"token {token}"}, timeout=120) as http:
        async with Client(
            streamable_http_client(base + "/mcp", http_client=http), mode="legacy"
        ) as ours:
            first = json.loads(
                ok(await ours.call_tool("execute_notebook_cells", {"pathInProject": "one.ipynb"}))
            )
            assert first["cells"][0]["outputs"][0]["text"] == "2", first

            async def code() -> None:
                answer = json.loads(
                    ok(
                        await ours.call_tool(
                            "execute_code_in_kernel", {"pathInProject": "one.ipynb", "code": "1+1"}
                        )
                    )
                )
                assert answer["outputs"][0]["text"] == "2"

            async def cell() -> None:
                ok(
                    await ours.call_tool(
                        "execute_notebook_cells", {"pathInProject": "one.ipynb", "cellIds": ["one"]}
                    )
                )

            async def read_all(outputs: bool) -> dict[str, Any]:
                # The answer comes in result windows: read on until the last one.
                text, offset = "", 0
                while True:
                    arguments = {
                        "pathInProject": "big.ipynb",
                        "limit": 100,
                        "includeOutputs": outputs,
                        "resultStart": offset,
                    }
                    result = await ours.call_tool("get_notebook_cells", arguments)
                    window = ok(result)
                    text += window
                    offset += len(window)
                    if len(result.content) == 1:
                        return dict(json.loads(text))

            async def read() -> None:
                answer = await read_all(True)
                assert len(answer["cells"]) == 100 and answer["cells"][99]["outputs"]

            async def read_sources() -> None:
                answer = await read_all(False)
                assert len(answer["cells"]) == 100 and "outputs" not in answer["cells"][99]

            async def first_window() -> None:
                arguments = {"pathInProject": "big.ipynb", "limit": 100}
                ok(await ours.call_tool("get_notebook_cells", arguments))

            rows["ours: execute_code_in_kernel 1+1"] = await timed(code, calls)
            rows["ours: execute_notebook_cells (1+1 cell)"] = await timed(cell, calls)
            sessions = json.loads((await http.get(base + "/api/sessions")).text)
            kernel_id = next(s["kernel"]["id"] for s in sessions if s["path"] == "one.ipynb")
            rows["bare jupyter_client round trip 1+1"] = await bare_round_trip(
                runtime / f"kernel-{kernel_id}.json", calls
            )
            rows["ours: get_notebook_cells (100 cells, outputs)"] = await timed(read, calls)
            rows["  of which one call (the first window)"] = await timed(first_window, calls)
            rows["ours: get_notebook_cells (100 cells, sources)"] = await timed(read_sources, calls)

    async with httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {mcp_token}"}, timeout=120
    ) as http:
        async with Client(streamable_http_client(peer, http_client=http), mode="legacy") as theirs:
            print(
                ok(
                    await theirs.call_tool(
                        "use_notebook", {"notebook_name": "one", "notebook_path": "one.ipynb"}
                    )
                )[:200]
            )

            async def peer_cell() -> None:
                text = ok(await theirs.call_tool("execute_cell", {"cell_index": 0, "timeout": 60}))
                assert "2" in text, text

            rows["peer: execute_cell (1+1 cell)"] = await timed(peer_cell, calls)
            ok(
                await theirs.call_tool(
                    "use_notebook", {"notebook_name": "big", "notebook_path": "big.ipynb"}
                )
            )

            async def peer_read() -> None:
                text = ok(
                    await theirs.call_tool(
                        "read_notebook",
                        {"notebook_name": "big", "response_format": "detailed", "limit": 100},
                    )
                )
                assert "100 cells" in text, text[:300]

            rows["peer: read_notebook (100 cells, detailed)"] = await timed(peer_read, calls)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    python = venv_python()
    token, mcp_token = secrets.token_hex(16), secrets.token_hex(16)
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "root", Path(tmp) / "home"
        root.mkdir()
        home.mkdir()
        notebooks(root)
        server, base = start_jupyter(python, root, home, token)
        peer = None
        try:
            peer, peer_url = start_peer(home, base, token, mcp_token)
            rows = asyncio.run(
                measure(base, token, peer_url, mcp_token, home / "runtime", args.calls)
            )
        finally:
            for process in (peer, server):
                if process is not None:
                    process.terminate()
                    try:
                        process.wait(10)
                    except subprocess.TimeoutExpired:
                        process.kill()
    print(f"\n{args.calls} calls each (after 5 warm-up calls), milliseconds:\n")
    print(f"{'':48} {'p50':>8} {'p99':>8} {'mean':>8}")
    for label, samples in rows.items():
        figures = (p(samples, 0.5), p(samples, 0.99), statistics.mean(samples))
        print(f"{label:48} " + " ".join(f"{f:8.1f}" for f in figures))
    bare = p(rows["bare jupyter_client round trip 1+1"], 0.5)
    code = p(rows["ours: execute_code_in_kernel 1+1"], 0.5)
    cell = p(rows["ours: execute_notebook_cells (1+1 cell)"], 0.5)
    peer_cell = p(rows["peer: execute_cell (1+1 cell)"], 0.5)
    read = p(rows["ours: get_notebook_cells (100 cells, outputs)"], 0.5)
    peer_read = p(rows["peer: read_notebook (100 cells, detailed)"], 0.5)
    print()
    print(f"execute_code_in_kernel over a bare round trip: {code - bare:6.1f} ms p50 (target ≤ 10)")
    print(f"execute_notebook_cells over a bare round trip: {cell - bare:6.1f} ms p50 (no target)")
    print(
        f"execute_notebook_cells / peer execute_cell:    {cell / peer_cell:6.2f}× (target ≤ 0.5×)"
    )
    print(
        f"get_notebook_cells / peer read_notebook:       {read / peer_read:6.2f}× (target ≤ 0.5×)"
    )
    sources = p(rows["ours: get_notebook_cells (100 cells, sources)"], 0.5)
    print(f"  the same with sources only, as the peer's:   {sources / peer_read:6.2f}×")


if __name__ == "__main__":
    main()
