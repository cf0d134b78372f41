"""Latency of ``tools/call get_file_text_by_path`` on standard MCP, next to its references.

Starts a real ``jupyter server`` with jupyter_mcp on a temporary folder (token auth) and, from
one run, prints p50/p99 of reading the same file through:

- standard MCP (``/mcp``) with the official SDK client, one session, many calls: legacy
  handshake era and 2026-07-28 (``auto``);
- seed REST ``POST /mcp/get_file_text_by_path``;
- the reference, Jupyter's own contents API ``GET /api/contents/<file>``.

Each HTTP client keeps its connection alive. Target: MCP p50 no slower than the contents API.
The figures are wall-clock on whatever machine runs this: on a shared, busy machine they are
noisy, so compare the rows of one run with each other.

    .venv/bin/python benchmarks/bench_mcp.py [--calls 300] [--size 4000]
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

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(root: Path, home: Path, token: str) -> tuple[subprocess.Popen[bytes], str]:
    """A ``jupyter server`` with jupyter_mcp serving ``root``; its base URL."""
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
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_DATA_DIR": str(home / "data"),
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_server",
            f"--config={home / 'config.json'}",
            "--allow-root",
        ],
        cwd=home,
        env=env,
        stdout=open(home / "server.log", "wb"),  # noqa: SIM115 - lives as long as the server
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            probe = urllib.request.Request(
                base + "/api/status", headers={"Authorization": f"token {token}"}
            )
            urllib.request.urlopen(probe, timeout=2).read()
            return process, base
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                log = (home / "server.log").read_text(errors="replace")[-3000:]
                raise SystemExit(f"jupyter server did not start:\n{log}") from None
            time.sleep(0.3)


async def timed(call: Callable[[], Awaitable[None]], calls: int, warmup: int) -> list[float]:
    """Milliseconds per call, after ``warmup`` untimed calls."""
    for _ in range(warmup):
        await call()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(
    base: str, token: str, name: str, calls: int, warmup: int
) -> dict[str, list[float]]:
    headers = {"Authorization": f"token {token}"}
    results: dict[str, list[float]] = {}

    for mode in ("legacy", "auto"):
        async with httpx2.AsyncClient(headers=headers) as http:
            transport = streamable_http_client(base + "/mcp", http_client=http)
            async with Client(transport, mode=mode) as client:

                async def mcp_call(client: Client = client) -> None:
                    result = await client.call_tool(
                        "get_file_text_by_path", {"pathInProject": name}
                    )
                    assert not result.is_error, result

                label = f"MCP tools/call ({client.protocol_version})"
                results[label] = await timed(mcp_call, calls, warmup)

    async with httpx2.AsyncClient(headers=headers) as http:

        async def seed_call() -> None:
            response = await http.post(
                f"{base}/mcp/get_file_text_by_path", json={"pathInProject": name}
            )
            assert response.status_code == 200 and response.json()["error"] is None

        async def contents_call() -> None:
            response = await http.get(f"{base}/api/contents/{name}")
            assert response.status_code == 200

        results["seed REST POST /mcp/get_file_text_by_path"] = await timed(seed_call, calls, warmup)
        results["reference: GET /api/contents/<file>"] = await timed(contents_call, calls, warmup)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="timed calls per surface")
    parser.add_argument("--warmup", type=int, default=30, help="untimed calls first")
    parser.add_argument("--size", type=int, default=4000, help="file size in characters")
    args = parser.parse_args()

    token = secrets.token_hex(16)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        root = home / "root"
        root.mkdir()
        name = "module.py"
        line = "value = compute(alpha, beta)  # a typical line of code\n"
        (root / name).write_text((line * (args.size // len(line) + 1))[: args.size])
        process, base = start_server(root, home, token)
        try:
            results = asyncio.run(measure(base, token, name, args.calls, args.warmup))
        finally:
            process.terminate()
            process.wait(timeout=30)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"get_file_text_by_path, {args.size}-character file, {args.calls} calls each "
        f"(load average {load:.1f} on {os.cpu_count()} cores: figures are under that load)"
    )
    print(f"{'surface':<48} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
    for label, samples in results.items():
        print(
            f"{label:<48} {percentile(samples, 0.5):>8.2f} {percentile(samples, 0.99):>8.2f} "
            f"{statistics.fmean(samples):>8.2f}"
        )


if __name__ == "__main__":
    main()
