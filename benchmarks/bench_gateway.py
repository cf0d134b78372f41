"""A kernel behind a Jupyter Kernel Gateway: this package's client next to jupyter_server's own.

Starts a real Kernel Gateway (``jupyter-kernel-gateway``, the test extra) on loopback without a
token (jupyter_server's client cannot send one on the kernel's websocket), one kernel in it,
and talks to that kernel with both clients from this process, as a Jupyter server started with
``--gateway-url`` does:

- ``1+1`` round trips (execute request → idle and reply), p50 and p99;
- the CPU this process spends while one cell sleeps two seconds (nothing to read meanwhile):
  jupyter_server's client spins on the event loop while it waits for a message. Target: ours
  ≤ 0.05 s;
- closing the client (its websocket), which jupyter_server's may make wait up to 3 s when its
  router thread takes the gateway's closing frame (rare). Target: ours ≤ 50 ms.

Figures are from one run on whatever machine runs this; on a shared, busy machine they are
noisy, so compare the rows of one run with each other.

    .venv/bin/python benchmarks/bench_gateway.py [--calls 100]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import queue
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _server import _stop, free_port, percentiles, wait_for_port
from jupyter_server.gateway.gateway_client import GatewayClient
from jupyter_server.gateway.managers import GatewayMappingKernelManager

from jupyter_mcp.kernels import managers
from jupyter_mcp.kernels.execute import execute


def start_gateway(folder: Path) -> subprocess.Popen[bytes]:
    """A Kernel Gateway on a free loopback port, its Jupyter folders in ``folder``."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    for name in ("runtime", "data", "config"):
        (folder / name).mkdir()
        env[f"JUPYTER_{name.upper()}_DIR"] = str(folder / name)
    env.update(KG_IP="127.0.0.1", KG_PORT=str(port), KG_PORT_RETRIES="0", KG_LIST_KERNELS="True")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernel_gateway"],
        env=env,
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_for_port(proc, port, "the kernel gateway", seconds=90)
    GatewayClient.instance(url=f"http://127.0.0.1:{port}")
    return proc


async def round_trip(client: Any, code: str) -> dict[str, Any]:
    """``code`` executed, its reply once the kernel went idle."""

    async def alive() -> bool:
        return True

    return await execute(client, code, on_message=lambda kind, content: None, is_alive=alive)


async def measure(kernel: Any, calls: int) -> dict[str, dict[str, float]]:
    """The figures of both clients of ``kernel``."""
    clients = {
        "jupyter_server's GatewayKernelClient": lambda: kernel.client(),
        "ours (kernels/gateway.py)": lambda: managers.new_client(kernel),
    }
    figures: dict[str, dict[str, float]] = {}
    for label, make in clients.items():
        client = make()
        await managers.connect(client)
        for _ in range(5):  # warm-up
            await round_trip(client, "1+1")
        samples = []
        for _ in range(calls):
            started = time.perf_counter()
            await round_trip(client, "1+1")
            samples.append(time.perf_counter() - started)
        p50, p99 = percentiles(samples)
        cpu = time.process_time()
        await round_trip(client, "import time; time.sleep(2)")
        cpu = time.process_time() - cpu
        # Nothing left unread on the way out (both warn about unread messages otherwise).
        for channel in (client.iopub_channel, client.shell_channel):
            while True:
                try:
                    await channel.get_msg(timeout=0.2)
                except queue.Empty:
                    break
        started = time.perf_counter()
        client.stop_channels()
        closing = (time.perf_counter() - started) * 1000
        figures[label] = {"p50": p50, "p99": p99, "cpu": cpu, "close": closing}
    return figures


async def run(calls: int) -> dict[str, dict[str, float]]:
    kernels = GatewayMappingKernelManager()
    kernel_id = await kernels.start_kernel(kernel_name="python3")
    try:
        return await measure(kernels.get_kernel(kernel_id), calls)
    finally:
        await kernels.shutdown_kernel(kernel_id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-gateway-") as tmp:
        gateway = start_gateway(Path(tmp))
        try:
            figures = asyncio.run(run(args.calls))
        finally:
            _stop(gateway)
    print(f"\nA kernel behind Kernel Gateway, {args.calls} round trips of 1+1 each:\n")
    print(f"{'':40} {'p50 ms':>8} {'p99 ms':>8} {'CPU s, 2 s cell':>16} {'close ms':>9}")
    for label, row in figures.items():
        print(
            f"{label:40} {row['p50']:8.1f} {row['p99']:8.1f} {row['cpu']:16.3f} {row['close']:9.1f}"
        )
    ours = figures["ours (kernels/gateway.py)"]
    print()
    print(f"ours, CPU while a cell sleeps 2 s: {ours['cpu']:.3f} s (target ≤ 0.05)")
    print(f"ours, closing the client:          {ours['close']:.1f} ms (target ≤ 50)")


if __name__ == "__main__":
    main()
