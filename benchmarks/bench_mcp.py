"""Latency of ``tools/call get_file_text_by_path`` on standard MCP, next to its references.

Starts a real ``jupyter server`` with jupyter_mcp on a temporary folder (token auth) and, from
one run, prints p50/p99 of reading the same file through:

- standard MCP (``/mcp``) with the official SDK client, one session, many calls: legacy
  handshake era and 2026-07-28 (``auto``);
- standard MCP, legacy session, spoken over the same plain httpx client as the REST rows
  (:class:`RawSession`): the SDK client's own cost left out, what the server's protocol layer
  costs;
- seed REST ``POST /mcp/get_file_text_by_path``;
- the reference, Jupyter's own contents API ``GET /api/contents/<file>``;
- the legacy SDK-client row again on the SDK's own server (see below): what the SDK's
  transport and client cost per call without anything of ours.

Every MCP client lists the tools as its session opens, before the clock starts (the SDK client
would otherwise list them inside its first call of a tool it has not seen).

The rows take turns call by call, so that a busy machine's load, which drifts, weighs on every
row alike. Each HTTP client keeps its connection alive. Targets: MCP p50 no slower than the
contents API, and at most 1.5x seed REST's.

Then, under load, ``--sessions`` clients at once (each its own connection and, on MCP, its own
session) make ``--load-calls`` calls each: calls per second, p50/p99 and errors per surface.
Targets: MCP throughput at least 0.7x seed REST's, p99 at most 10x p50, no errors. The two
kinds of MCP session then run the same load on the SDK's own server (``_sdk_server.py``: the
SDK's Starlette app under uvicorn, one tool reading the file, no auth): what the SDK's transport
and dispatcher allow on their own, printed against the same REST figure.
The figures are wall-clock on whatever machine runs this: on a shared, busy machine they are
noisy, so compare the rows of one run with each other.

    .venv/bin/python benchmarks/bench_mcp.py [--calls 300] [--sessions 50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Collection
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).parent))
from _server import jupyter_server, sdk_server  # noqa: E402

#: The protocol revision the SDK's legacy mode negotiates (the rows are labelled by it).
LEGACY = "2025-11-25"
RAW_ROW = f"MCP tools/call ({LEGACY}), httpx client"
SDK_SINGLE = f"reference: SDK's own server ({LEGACY}), SDK client"
#: The load rows also run on the SDK's own server (``_sdk_server.py``), with their labels there.
SDK_ROWS = {
    "MCP tools/call, legacy sessions": "reference: SDK's own server, SDK client",
    "MCP tools/call, legacy, httpx client": "reference: SDK's own server, httpx",
}


class RawSession:
    """A legacy MCP session spoken over plain HTTP with the same client as the REST rows.

    The SDK client costs about twice an httpx POST per call, on the cores the server shares:
    this client isolates what the server's protocol layer costs. It does what the SDK client
    does on the wire: ``initialize`` (answered on an event stream), ``notifications/
    initialized``, ``tools/list``, then one POST per call (answered as one JSON body), and
    ``DELETE`` at the end.
    """

    def __init__(self, http: Any, base: str, name: str = "bench_mcp") -> None:
        self.http = http
        self.url = base + "/mcp"
        self.name = name
        self.headers = {"Accept": "application/json, text/event-stream"}
        self.next_id = 0

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The result of one request (an error raises)."""
        return (await self.exchange(method, params))[1]

    async def exchange(self, method: str, params: dict[str, Any]) -> tuple[bytes, dict[str, Any]]:
        """One request: the JSON-RPC answer as the server sent it (bytes), and its result."""
        self.next_id += 1
        response = await self.http.post(
            self.url,
            json={"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params},
            headers=self.headers,
        )
        response.raise_for_status()
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            data = [
                line[5:].strip()
                for line in response.content.splitlines()
                if line.startswith(b"data:")
            ]
            raw = next(d for d in data if json.loads(d).get("id") == self.next_id)
        else:
            raw = response.content
        message = json.loads(raw)
        if "error" in message:
            raise RuntimeError(message["error"])
        return raw, message["result"]

    async def __aenter__(self) -> RawSession:
        response = await self.http.post(
            self.url,
            json={
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": LEGACY,
                    "capabilities": {},
                    "clientInfo": {"name": self.name, "version": "0"},
                },
            },
            headers=self.headers,
        )
        response.raise_for_status()
        if "mcp-session-id" in response.headers:  # a stateless server issues none
            self.headers["Mcp-Session-Id"] = response.headers["mcp-session-id"]
        self.headers["Mcp-Protocol-Version"] = LEGACY
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        (await self.http.post(self.url, json=initialized, headers=self.headers)).raise_for_status()
        await self.request("tools/list", {})
        return self

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> None:
        result = await self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(result)

    async def __aexit__(self, *exc: Any) -> None:
        await self.http.delete(self.url, headers=self.headers)


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
    base: str, token: str, sdk_base: str, name: str, calls: int, warmup: int
) -> dict[str, list[float]]:
    """Milliseconds per call of each single-call row, the rows taking turns call by call (a
    busy machine's load, which drifts, weighs on every row alike)."""
    headers = {"Authorization": f"token {token}"}
    rows: dict[str, Callable[[], Awaitable[None]]] = {}
    async with contextlib.AsyncExitStack() as stack:

        async def sdk_client(url: str, http: Any, mode: str) -> Client:
            client = await stack.enter_async_context(
                Client(streamable_http_client(url + "/mcp", http_client=http), mode=mode)
            )
            await client.list_tools()  # as the session opens (see under_load)
            return client

        def mcp_call(client: Client) -> Callable[[], Awaitable[None]]:
            async def call() -> None:
                result = await client.call_tool("get_file_text_by_path", {"pathInProject": name})
                assert not result.is_error, result

            return call

        for mode in ("legacy", "auto"):
            http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers))
            client = await sdk_client(base, http, mode)
            if mode == "legacy":
                assert client.protocol_version == LEGACY, client.protocol_version
            rows[f"MCP tools/call ({client.protocol_version})"] = mcp_call(client)

        http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers))
        raw = await stack.enter_async_context(RawSession(http, base))

        async def raw_call() -> None:
            await raw.call_tool("get_file_text_by_path", {"pathInProject": name})

        rows[RAW_ROW] = raw_call
        rest = await stack.enter_async_context(httpx2.AsyncClient(headers=headers))

        async def seed_call() -> None:
            response = await rest.post(
                f"{base}/mcp/get_file_text_by_path", json={"pathInProject": name}
            )
            assert response.status_code == 200 and response.json()["error"] is None

        async def contents_call() -> None:
            response = await rest.get(f"{base}/api/contents/{name}")
            assert response.status_code == 200

        rows["seed REST POST /mcp/get_file_text_by_path"] = seed_call
        rows["reference: GET /api/contents/<file>"] = contents_call
        sdk_http = await stack.enter_async_context(httpx2.AsyncClient())
        rows[SDK_SINGLE] = mcp_call(await sdk_client(sdk_base, sdk_http, "legacy"))

        for _ in range(warmup):
            for call in rows.values():
                await call()
        results: dict[str, list[float]] = {label: [] for label in rows}
        for _ in range(calls):
            for label, call in rows.items():
                started = time.perf_counter()
                await call()
                results[label].append((time.perf_counter() - started) * 1000)
    return results


Loaded = dict[str, tuple[float, list[float], int, float, float]]


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far (Linux /proc), seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def under_load(
    base: str,
    token: str,
    name: str,
    sessions: int,
    calls: int,
    pid: int,
    rows: Collection[str] | None = None,
) -> Loaded:
    """``sessions`` clients at once, ``calls`` each: per surface, calls per second, latencies
    (ms), errors, and the server's and this client process's CPU milliseconds per call.

    Every client opens its own connection (and, on MCP, its session) first; the clock starts
    once all are open and stops with the last call's answer, before any session closes (an MCP
    session's close, its ``DELETE`` and the server ending it, is no tool call, and REST has none
    to close), so the figures are of tool calls only. Client and server share the
    machine's cores: the CPU figures tell which of the two bounds the rate. An empty ``token``
    sends no credentials (the SDK's own server takes none).
    """
    headers = {"Authorization": f"token {token}"} if token else {}
    results: Loaded = {}

    async def run(label: str, make: Callable[[Any], Any]) -> None:
        if rows is not None and label not in rows:
            return
        samples: list[float] = []
        errors = 0
        ready = asyncio.Event()
        opened = finished = 0
        # Set with the last call's answer: the sessions close after it, off the clock.
        ended = asyncio.Event()
        stopped: list[tuple[float, float, float]] = []

        async def one() -> None:
            nonlocal errors, opened, finished
            try:
                async with make_client(make) as call:
                    opened += 1
                    if opened == sessions:
                        ready.set()
                    await ready.wait()
                    for _ in range(calls):
                        started = time.perf_counter()
                        try:
                            await call()
                        except Exception:
                            errors += 1
                        samples.append((time.perf_counter() - started) * 1000)
                    finished += 1
                    if finished == sessions:
                        stopped.append((time.perf_counter(), cpu_seconds(pid), time.process_time()))
                        ended.set()
                    await ended.wait()
            finally:
                # A session that cannot open ends the run with its error instead of a wait
                # for the others that never ends.
                ready.set()
                ended.set()

        tasks = [asyncio.create_task(one()) for _ in range(sessions)]
        await ready.wait()
        started = time.perf_counter()
        server_cpu, client_cpu = cpu_seconds(pid), time.process_time()
        await asyncio.gather(*tasks)
        # The clock, as the CPU figures, stops with the last call (else, a run that failed,
        # once all ended).
        stop = (
            stopped[0] if stopped else (time.perf_counter(), cpu_seconds(pid), time.process_time())
        )
        elapsed = stop[0] - started
        server_cpu = (stop[1] - server_cpu) * 1000 / len(samples)
        client_cpu = (stop[2] - client_cpu) * 1000 / len(samples)
        results[label] = (len(samples) / elapsed, samples, errors, server_cpu, client_cpu)

    class make_client:  # noqa: N801 - used as a context manager factory
        def __init__(self, make: Callable[[Any], Any]) -> None:
            self.make = make

        async def __aenter__(self) -> Callable[[], Awaitable[None]]:
            self.http = httpx2.AsyncClient(headers=headers, timeout=120)
            await self.http.__aenter__()
            self.inner = self.make(self.http)
            return await self.inner.__aenter__()

        async def __aexit__(self, *exc: Any) -> None:
            await self.inner.__aexit__(*exc)
            await self.http.__aexit__(*exc)

    class mcp_session:  # noqa: N801
        def __init__(self, http: Any, mode: str) -> None:
            self.client = Client(streamable_http_client(base + "/mcp", http_client=http), mode=mode)

        async def __aenter__(self) -> Callable[[], Awaitable[None]]:
            client = await self.client.__aenter__()
            # Listed as the session opens, as an agent's client does: the SDK client lists the
            # tools itself on its first call of a tool it has not seen, which would otherwise
            # put one tools/list per session inside the timed calls.
            await client.list_tools()

            async def call() -> None:
                result = await client.call_tool("get_file_text_by_path", {"pathInProject": name})
                if result.is_error:
                    raise RuntimeError(result)

            return call

        async def __aexit__(self, *exc: Any) -> None:
            await self.client.__aexit__(*exc)

    class raw_session:  # noqa: N801
        def __init__(self, http: Any) -> None:
            self.session = RawSession(http, base)

        async def __aenter__(self) -> Callable[[], Awaitable[None]]:
            session = await self.session.__aenter__()

            async def call() -> None:
                await session.call_tool("get_file_text_by_path", {"pathInProject": name})

            return call

        async def __aexit__(self, *exc: Any) -> None:
            await self.session.__aexit__(*exc)

    class rest_client:  # noqa: N801
        def __init__(self, http: Any) -> None:
            self.http = http

        async def __aenter__(self) -> Callable[[], Awaitable[None]]:
            async def call() -> None:
                response = await self.http.post(
                    f"{base}/mcp/get_file_text_by_path", json={"pathInProject": name}
                )
                if response.status_code != 200 or response.json()["error"] is not None:
                    raise RuntimeError(response.text)

            return call

        async def __aexit__(self, *exc: Any) -> None:
            pass

    await run("MCP tools/call, legacy sessions", lambda http: mcp_session(http, "legacy"))
    await run("MCP tools/call, 2026-07-28", lambda http: mcp_session(http, "auto"))
    await run("MCP tools/call, legacy, httpx client", raw_session)
    await run("seed REST POST /mcp/get_file_text_by_path", rest_client)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="timed calls per surface")
    parser.add_argument("--warmup", type=int, default=30, help="untimed calls first")
    parser.add_argument("--size", type=int, default=4000, help="file size in characters")
    parser.add_argument("--sessions", type=int, default=50, help="concurrent clients under load")
    parser.add_argument("--load-calls", type=int, default=20, help="calls per client under load")
    parser.add_argument(
        "--rounds", type=int, default=3, help="load rounds; each surface's median one is shown"
    )
    parser.add_argument(
        "--server-option",
        action="append",
        default=[],
        help="a jupyter server option, e.g. --server-option=--JupyterMCP.inline_calls=False",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        name = "module.py"
        line = "value = compute(alpha, beta)  # a typical line of code\n"
        (root / name).write_text((line * (args.size // len(line) + 1))[: args.size])
        with (
            jupyter_server(root, *args.server_option) as server,
            sdk_server(root) as (ref_base, ref_pid),
        ):
            base, token, pid = server.url, server.token, server.proc.pid
            results = asyncio.run(measure(base, token, ref_base, name, args.calls, args.warmup))
            rounds = []
            for _ in range(args.rounds):
                round_ = asyncio.run(
                    under_load(base, token, name, args.sessions, args.load_calls, pid)
                )
                # The same two kinds of MCP session on the SDK's own server, which has nothing
                # of ours, in the same round.
                answered = asyncio.run(
                    under_load(
                        ref_base, "", name, args.sessions, args.load_calls, ref_pid, SDK_ROWS
                    )
                )
                round_.update({SDK_ROWS[label]: row for label, row in answered.items()})
                rounds.append(round_)
        # Per surface, the round with the median rate (the surfaces take turns each round).
        loaded = {
            label: sorted((r[label] for r in rounds), key=lambda row: row[0])[len(rounds) // 2]
            for label in rounds[0]
        }

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"get_file_text_by_path, {args.size}-character file, {args.calls} calls each "
        f"(load average {load:.1f} on {os.cpu_count()} cores: figures are under that load)"
    )
    print(f"{'surface':<54} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
    for label, samples in results.items():
        print(
            f"{label:<54} {percentile(samples, 0.5):>8.2f} {percentile(samples, 0.99):>8.2f} "
            f"{statistics.fmean(samples):>8.2f}"
        )
    mcp_p50 = percentile(results[f"MCP tools/call ({LEGACY})"], 0.5)
    rest_p50 = percentile(results["seed REST POST /mcp/get_file_text_by_path"], 0.5)
    raw_p50 = percentile(results[RAW_ROW], 0.5)
    sdk_p50 = percentile(results[SDK_SINGLE], 0.5)
    print(
        f"MCP (legacy) p50 / seed REST p50: SDK client {mcp_p50 / rest_p50:.2f}x, "
        f"httpx client (as REST's) {raw_p50 / rest_p50:.2f}x (target <= 1.5x); "
        f"the SDK's own server, SDK client: {sdk_p50 / rest_p50:.2f}x"
    )
    print()
    print(
        f"Under load: {args.sessions} concurrent clients x {args.load_calls} calls, "
        f"median of {args.rounds} rounds "
        "(targets: MCP calls/s >= 0.7x REST, p99 <= 10x p50, no errors)"
    )
    print(
        f"{'surface':<42} {'calls/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'errors':>6} "
        f"{'server CPU':>10} {'client CPU':>10}  (ms per call)"
    )
    rest_rate = loaded["seed REST POST /mcp/get_file_text_by_path"][0]
    for label, (rate, samples, errors, server_cpu, client_cpu) in loaded.items():
        p50, p99 = percentile(samples, 0.5), percentile(samples, 0.99)
        print(
            f"{label:<42} {rate:>8.1f} {p50:>7.1f} {p99:>7.1f} {errors:>6} "
            f"{server_cpu:>10.2f} {client_cpu:>10.2f}  "
            f"{rate / rest_rate:.2f}x REST rate, p99 {p99 / p50:.1f}x p50"
        )
    # On a busy machine each process gets a share of the cores, and the rate follows the CPU a
    # call costs the busier of server and client: the CPU figures say which, and why.
    rest_cpu = loaded["seed REST POST /mcp/get_file_text_by_path"][3]
    ours_cpu = loaded["MCP tools/call, legacy, httpx client"][3]
    sdk_cpu = loaded[SDK_ROWS["MCP tools/call, legacy, httpx client"]][3]
    print(
        f"Server CPU per call, httpx clients: MCP {ours_cpu:.2f} ms = {ours_cpu / rest_cpu:.2f}x "
        f"seed REST's {rest_cpu:.2f} ms; seed REST + the SDK's own server ({sdk_cpu:.2f} ms) = "
        f"{rest_cpu + sdk_cpu:.2f} ms (the SDK's whole server stacked on Jupyter's HTTP layer)"
    )
    # The table's rows are each surface's median round, which on a machine whose load drifts
    # can be different rounds; within a round the surfaces ran seconds apart, so each round's
    # own ratios are the fairer comparison.
    rest_label = "seed REST POST /mcp/get_file_text_by_path"
    print("Calls/s x REST's of the same round:")
    for label in rounds[0]:
        if label != rest_label:
            ratios = ", ".join(f"{r[label][0] / r[rest_label][0]:.2f}x" for r in rounds)
            print(f"  {label:<42} {ratios}")


if __name__ == "__main__":
    main()
