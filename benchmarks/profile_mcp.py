"""Where one ``get_file_text_by_path`` call spends the server's time, per surface and per layer.

Starts a real ``jupyter server`` with jupyter_mcp (token auth, as ``bench_mcp``) under
:mod:`cProfile`, which profiles only the calls of the timed phase of each surface: standard MCP
(legacy sessions, the plain-HTTP client of ``bench_mcp``'s :class:`RawSession`) and seed REST,
``--sessions`` clients at once. It prints, per call, the server's event-loop thread time by the
package that spent it (a built-in function counts for the package that called it):

- ``tornado``, ``jupyter_server``: the HTTP server and Jupyter's handler (auth, headers, log);
- ``mcp SDK``: the SDK's transport, session and dispatcher, with the libraries it runs on
  (anyio, starlette, pydantic, mcp_types, opentelemetry);
- ``jupyter_mcp/<folder>``: ours (``surfaces`` is the MCP and REST glue, ``core`` the
  registry, the tool's own code its folder);
- ``asyncio``: the event loop's own scheduling (more tasks and hops, more of it);
- ``python stdlib``: the rest of the standard library (json, logging, contextlib, ...), for
  whichever layer called it.

Times are the thread's CPU time (not the wall clock, which on a busy machine counts the other
processes that ran meanwhile). cProfile's own cost per function call inflates every figure
several times over, in proportion to the calls made: read the rows' shares and the MCP / REST
ratio, not the totals (``bench_mcp`` gives the unprofiled CPU per call). Worker threads
(where the tool reads the file) are not profiled; the loop thread is where the surfaces differ.

``--functions N`` also prints the N functions whose own time per call differs most between the
surfaces (MCP minus REST), with how often each ran per call: which calls of a layer the gap is.

    .venv/bin/python benchmarks/profile_mcp.py [--calls 2000] [--sessions 10] [--functions 30]
        [--save PREFIX]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import pstats
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).parent))
from _server import Server, _stop, free_port  # noqa: E402
from bench_mcp import RawSession  # noqa: E402

#: Run as the server: profiling starts on SIGRTMIN and is written to PROFILE_OUT on SIGRTMIN+1.
SERVER = """
import cProfile, os, signal, sys, time
# The thread's CPU time, not the wall clock: on a busy machine a function's wall time counts
# the other processes that ran meanwhile.
profile = cProfile.Profile(time.thread_time_ns, 1e-9)
def start(*_):
    profile.enable()
def stop(*_):
    profile.disable()
    profile.dump_stats(os.environ["PROFILE_OUT"])
    profile.clear()
signal.signal(signal.SIGRTMIN, start)
signal.signal(signal.SIGRTMIN + 1, stop)
from jupyter_server.serverapp import main
sys.argv = ["jupyter-server", *sys.argv[1:]]
main()
"""

#: Packages counted as the MCP SDK: its own and what its transport and dispatcher run on.
SDK = ("mcp", "mcp_types", "anyio", "starlette", "pydantic", "pydantic_core", "opentelemetry")


def package(filename: str) -> str:
    """The layer a code file belongs to (see the module's docstring)."""
    ours = re.search(r"/(jupyter_mcp/[^/]+)", filename)
    if ours:
        return ours.group(1).removesuffix(".py")
    found = re.search(r"site-packages/([^/]+)", filename)
    if found:
        name = found.group(1).removesuffix(".py")
        return "mcp SDK" if name in SDK else name
    if "asyncio" in filename or "selectors" in filename:
        return "asyncio"
    return "python stdlib"


def by_layer(path: str) -> collections.Counter[str]:
    """Seconds of own time per layer; a built-in's time goes to the layer of its caller, and
    the event loop's wait for sockets (epoll) is left out."""
    layers: collections.Counter[str] = collections.Counter()
    for (filename, _, name), (_, _, own, _, callers) in pstats.Stats(path).stats.items():
        if filename != "~":
            layers[package(filename)] += own
            continue
        if "poll" in name and "epoll" in name:
            continue  # waiting, not working
        for (caller_file, _, _), (_, _, caller_own, _) in callers.items():
            layers[package(caller_file)] += caller_own
    return layers


def by_function(path: str) -> dict[str, tuple[float, int]]:
    """Own seconds and calls per function (``file:line:name``, site-packages' prefix cut)."""
    found: dict[str, tuple[float, int]] = {}
    for (filename, line, name), (_, calls, own, _, _) in pstats.Stats(path).stats.items():
        where = re.sub(r".*site-packages/", "", filename)
        found[f"{where}:{line}:{name}"] = (own, calls)
    return found


async def load(kind: str, server: Server, name: str, sessions: int, calls: int) -> None:
    """``sessions`` clients of one surface, ``calls`` calls each, profiled once all are open."""
    headers = {"Authorization": f"token {server.token}"}
    ready = asyncio.Event()
    opened = 0

    async def one() -> None:
        nonlocal opened
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http:
            session = await RawSession(http, server.url).__aenter__() if kind == "MCP" else None

            async def call() -> None:
                if session is not None:
                    await session.call_tool("get_file_text_by_path", {"pathInProject": name})
                    return
                response = await http.post(
                    f"{server.url}/mcp/get_file_text_by_path", json={"pathInProject": name}
                )
                assert response.status_code == 200 and response.json()["error"] is None

            for _ in range(20):  # warm (the server's warm start ends meanwhile)
                await call()
            opened += 1
            if opened == sessions:
                server.proc.send_signal(signal.SIGRTMIN)
                await asyncio.sleep(0.5)
                ready.set()
            await ready.wait()
            for _ in range(calls):
                await call()
            if session is not None:
                await session.__aexit__(None, None, None)

    await asyncio.gather(*(one() for _ in range(sessions)))
    server.proc.send_signal(signal.SIGRTMIN + 1)
    await asyncio.sleep(2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="profiled calls per surface")
    parser.add_argument("--sessions", type=int, default=10, help="clients at once")
    parser.add_argument(
        "--functions", type=int, default=0, help="also list the N functions of the largest gap"
    )
    parser.add_argument(
        "--server-option",
        action="append",
        default=[],
        help="a jupyter server option, e.g. --server-option=--JupyterMCP.inline_calls=False",
    )
    parser.add_argument(
        "--save",
        default=None,
        help="also keep each surface's profile as SAVE-MCP.prof / SAVE-REST.prof (for pstats: "
        "cumulative times, callers)",
    )
    args = parser.parse_args()
    per_session = max(1, args.calls // args.sessions)
    calls = per_session * args.sessions

    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as cwd:
        root = Path(tmp)
        name = "module.py"
        line = "value = compute(alpha, beta)  # a typical line of code\n"
        (root / name).write_text((line * 80)[:4000])
        out = root.parent / f"profile-{secrets.token_hex(4)}.prof"
        port, token = free_port(), secrets.token_hex(16)
        command = [
            sys.executable,
            "-c",
            SERVER,
            "--no-browser",
            "--allow-root",
            f"--port={port}",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.jpserver_extensions={'jupyter_mcp': True}",
            "--log-level=WARN",
            *args.server_option,
        ]
        env = {**os.environ, "JUPYTER_TOKEN": token, "PROFILE_OUT": str(out)}
        proc = subprocess.Popen(
            command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        server = Server(root, port, token, proc)
        results: dict[str, collections.Counter[str]] = {}
        functions: dict[str, dict[str, tuple[float, int]]] = {}
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if server.request(server.connection(), "GET", "/api/status")[0] == 200:
                        break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("jupyter server did not start")
                time.sleep(0.2)
            time.sleep(5)  # past the warm start (search worker, code analysis) of a new server
            for kind in ("MCP", "REST"):
                asyncio.run(load(kind, server, name, args.sessions, per_session))
                results[kind] = by_layer(str(out))
                if args.save:
                    shutil.copyfile(out, f"{args.save}-{kind}.prof")
                functions[kind] = by_function(str(out))
        finally:
            _stop(proc)
            out.unlink(missing_ok=True)

    layers = sorted(
        set(results["MCP"]) | set(results["REST"]),
        key=lambda layer: -(results["MCP"][layer] + results["REST"][layer]),
    )
    mcp_total, rest_total = (sum(results[k].values()) * 1e6 / calls for k in ("MCP", "REST"))
    gap = mcp_total - rest_total
    print(
        f"get_file_text_by_path, {calls} profiled calls per surface, {args.sessions} clients "
        "at once: the event-loop thread's CPU time per call under cProfile, in profiled us "
        "(the profiler's cost per function call inflates them several times over: read the "
        "shares)"
    )
    print(f"{'layer':<24} {'MCP':>7} {'REST':>7} {'MCP - REST':>11} {'of the gap':>11}")
    for layer in layers:
        mcp, rest = (results[k][layer] * 1e6 / calls for k in ("MCP", "REST"))
        if max(mcp, rest) < 0.005 * mcp_total:
            continue
        share = (mcp - rest) / gap if gap else 0.0
        print(f"{layer:<24} {mcp:>7.0f} {rest:>7.0f} {mcp - rest:>+11.0f} {share:>10.0%}")
    print(f"{'total':<24} {mcp_total:>7.0f} {rest_total:>7.0f} {gap:>+11.0f}")
    print(f"MCP / REST: {mcp_total / rest_total:.2f}x")
    if args.functions:
        print_functions(functions, calls, args.functions)


def print_functions(
    functions: dict[str, dict[str, tuple[float, int]]], calls: int, count: int
) -> None:
    """The ``count`` functions whose own time per call is most above REST's on MCP."""
    mcp, rest = functions["MCP"], functions["REST"]

    def gap(name: str) -> float:
        return mcp.get(name, (0.0, 0))[0] - rest.get(name, (0.0, 0))[0]

    print(f"\n{'MCP - REST us':>13} {'MCP runs':>9} {'REST runs':>9}  function (per call)")
    for name in sorted(set(mcp) | set(rest), key=gap, reverse=True)[:count]:
        runs = [table.get(name, (0.0, 0))[1] / calls for table in (mcp, rest)]
        print(f"{gap(name) * 1e6 / calls:>+13.1f} {runs[0]:>9.1f} {runs[1]:>9.1f}  {name}")


if __name__ == "__main__":
    main()
