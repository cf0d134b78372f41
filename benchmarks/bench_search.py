"""Benchmark: search_in_files_content through a real Jupyter server vs ripgrep and git grep.

Builds a tree of ≥ 15,000 files (a copy of this interpreter's site-packages, nothing
excluded), makes it a git repository once, starts ``jupyter server`` on it (token auth, the
extension enabled) and prints, from one run and side by side:

* warm wall time of ``POST /mcp/search_in_files_content`` (seed REST, one keep-alive
  connection) vs ``rg -l -F`` and ``git grep -l -F`` on the same tree and query;
* p50/p99/max latency of ``GET /api/status`` while searches run back to back on another
  connection (the event loop must not wait on the walk).

Usage: ``python benchmarks/bench_search.py [--runs 10] [--keep]``. ripgrep is Debian's
``ripgrep`` package; as root the script installs it with apt-get when it is missing.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path

TOKEN = "bench-search-token"
#: (searchText, case-sensitive?) — literal queries; rg and git grep get -F (and -i).
QUERIES = [("def setup", True), ("function helper", True), ("def setup", False)]


def build_tree(dest: Path) -> int:
    """Copy site-packages into ``dest``; return the number of files."""
    source = Path(sysconfig.get_paths()["purelib"])
    shutil.copytree(source, dest, symlinks=True)
    count = sum(len(files) for _, _, files in os.walk(dest))
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    subprocess.run(["git", "add", "-A"], cwd=dest, check=True)
    return count


def ensure_rg() -> str | None:
    """Path of ``rg``, installing Debian's ripgrep as root if needed; None if unavailable."""
    found = shutil.which("rg")
    if found or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    print("ripgrep missing: installing Debian's ripgrep with apt-get …", flush=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "ripgrep"], check=False)
    return shutil.which("rg")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(root: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    config = {
        "ServerApp": {
            "jpserver_extensions": {"jupyter_mcp": True},
            "open_browser": False,
            "allow_root": True,
            "port": port,
            "ip": "127.0.0.1",
            "root_dir": str(root),
        },
        "IdentityProvider": {"token": TOKEN},
    }
    config_dir = log.parent / "jupyter-config"
    config_dir.mkdir()
    (config_dir / "jupyter_server_config.json").write_text(json.dumps(config))
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config_dir)}
    handle = log.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter_server"], env=env, stdout=handle, stderr=handle
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/api/status", headers=auth())
            if conn.getresponse().status == 200:
                return proc
        except OSError:
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    proc.terminate()
    raise SystemExit(f"the server did not start:\n{log.read_text()[-3000:]}")


def auth() -> dict[str, str]:
    return {"Authorization": f"token {TOKEN}"}


def search(conn: http.client.HTTPConnection, query: str, case: bool = True) -> list[dict]:
    body = json.dumps({"searchText": query, "caseSensitive": case})
    conn.request("POST", "/mcp/search_in_files_content", body=body, headers=auth())
    answer = json.loads(conn.getresponse().read())
    if answer["error"] is not None:
        raise SystemExit(f"search failed: {answer['error']}")
    return answer["status"]


def timed(fn, runs: int) -> tuple[float, float, object]:
    """Median and best wall time of ``runs`` calls of ``fn`` (after one warm-up call)."""
    result = fn()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), min(times), result


def run_tool(cmd: list[str], cwd: Path) -> list[str]:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{cmd[0]} failed: {done.stderr}")
    return done.stdout.splitlines()


def status_latency(port: int, query: str | None, seconds: float) -> dict[str, float]:
    """Latency of GET /api/status while another connection searches back to back (or, with
    no query, while nothing else runs: the machine's own baseline)."""
    stop = threading.Event()
    searches = 0

    def searcher() -> None:
        nonlocal searches
        if query is None:
            return
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while not stop.is_set():
            search(conn, query)
            searches += 1

    thread = threading.Thread(target=searcher, daemon=True)
    thread.start()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    latencies = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len(latencies) < 5000:
        started = time.perf_counter()
        conn.request("GET", "/api/status", headers=auth())
        conn.getresponse().read()
        latencies.append(time.perf_counter() - started)
        time.sleep(0.01)
    stop.set()
    thread.join(timeout=60)
    latencies.sort()
    return {
        "n": len(latencies),
        "searches": searches,
        "p50": latencies[len(latencies) // 2],
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "max": latencies[-1],
    }


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs per tool and query")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the latency test")
    parser.add_argument("--keep", action="store_true", help="keep the temporary tree")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-search-"))
    tree = work / "tree"
    proc = None
    try:
        started = time.perf_counter()
        count = build_tree(tree)
        print(
            f"tree: {count} files in {tree} (copied and git-added in "
            f"{time.perf_counter() - started:.1f} s)"
        )
        rg = ensure_rg()
        if rg is None:
            print("rg: not found (install Debian's ripgrep: apt-get install ripgrep)")
        port = free_port()
        proc = start_server(tree, port, work / "server.log")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        started = time.perf_counter()
        search(conn, QUERIES[0][0])
        workers = ", ".join(f"{rss_mb(c):.0f} MB" for c in children(proc.pid))
        print(
            f"first search (builds the index): {time.perf_counter() - started:.2f} s; "
            f"RSS after: server {rss_mb(proc.pid):.0f} MB, search worker {workers}"
        )
        load = os.getloadavg()
        print(
            f"\nwarm wall time, median (best) of {args.runs} runs; the machine is shared "
            f"(load average {load[0]:.1f} on {os.cpu_count()} cores):"
        )
        print(f"{'query':<22}{'tool':<28}{'median':>9}{'best':>9}{'files':>7}")
        for query, case in QUERIES:
            rows = []
            flags = ["-l", "-F"] + ([] if case else ["-i"])
            med, best, result = timed(lambda q=query, c=case: search(conn, q, c), args.runs)
            name = "search_in_files_content" + ("" if case else " (ci)")
            rows.append((name, med, best, len(result)))
            if rg:
                cmd = [rg, *flags, query]
                med, best, out = timed(lambda cmd=cmd: run_tool(cmd, tree), args.runs)
                rows.append(("rg " + " ".join(flags), med, best, len(out)))
            cmd = ["git", "grep", *flags, query]
            med, best, out = timed(lambda cmd=cmd: run_tool(cmd, tree), args.runs)
            rows.append(("git grep " + " ".join(flags), med, best, len(out)))
            label = repr(query)
            for name, med, best, files in rows:
                print(f"{label:<22}{name:<28}{med * 1000:>7.0f}ms{best * 1000:>7.0f}ms{files:>7}")
            if rg:
                print(f"{'':<22}{'ratio to rg (median)':<28}{rows[0][1] / rows[1][1]:>8.2f}x")
        print(f"\nGET /api/status latency over {args.seconds:g} s (target p99 < 50 ms):")
        for label, query in (
            ("idle server", None),
            ("during back-to-back searches", QUERIES[0][0]),
        ):
            stats = status_latency(port, query, args.seconds)
            print(
                f"  {label:<30} p50 {stats['p50'] * 1000:5.1f} ms   "
                f"p99 {stats['p99'] * 1000:5.1f} ms   max {stats['max'] * 1000:6.1f} ms   "
                f"({stats['n']} requests, {stats['searches']} searches)"
            )
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
