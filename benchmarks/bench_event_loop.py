"""Benchmark: does running things through jupyter_mcp block the server's event loop?

Starts a real ``jupyter server`` with the extension on a scratch project and measures the
latency of ``GET /api/status`` (p50/p99/max) in two phases of one run:

* idle: nothing else happening (the baseline);
* busy: a run configuration (a task printing a line every millisecond, streamed through its
  kernel's iopub channel into the run's output) *and* a background command (a shell loop
  writing ~10 MB to stdout, over the 1 MiB cap, then sleeping) running at the same time.

Target: p99 under 50 ms while busy. Figures are from a shared 2-core machine under load.

Usage: ``python benchmarks/bench_event_loop.py [--requests 400]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _server import jupyter_server  # noqa: E402

TASKS = {
    "version": "2.0.0",
    "tasks": [
        {
            "label": "Chatty Task",
            "type": "process",
            "command": sys.executable,
            "args": [
                "-u",
                "-c",
                "import time\nfor i in range(60000):\n    print('line', i)\n    time.sleep(0.001)",
            ],
        }
    ],
}
BACKGROUND = (
    "i=0; while [ $i -lt 400 ]; do head -c 25000 /dev/zero | tr '\\0' x; i=$((i+1)); done; sleep 8"
)


def measure(server, count: int) -> list[float]:  # type: ignore[no-untyped-def]
    """Latencies (seconds) of ``count`` sequential GET /api/status on one keep-alive connection."""
    conn = server.connection()
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        status, _ = server.request(conn, "GET", "/api/status")
        samples.append(time.perf_counter() - started)
        assert status == 200
        time.sleep(0.01)
    conn.close()
    return samples


def summary(samples: list[float]) -> tuple[float, float, float]:
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    return pick(0.5), pick(0.99), ordered[-1] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-event-loop-"))
    (root / ".vscode").mkdir()
    (root / ".vscode" / "tasks.json").write_text(json.dumps(TASKS))
    with jupyter_server(root) as server:
        control = server.connection()
        measure(server, 20)  # warm up
        idle = measure(server, args.requests)

        server.call(control, "run_configuration", configName="Chatty Task")
        background: dict[str, object] = {}

        def run_background() -> None:
            conn = server.connection()
            background["result"] = server.call(
                conn, "run_command_on_background", command=BACKGROUND, timeout=120000
            )

        thread = threading.Thread(target=run_background)
        thread.start()
        # Wait until both show up as running before measuring.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            kinds = {i["kind"] for i in server.call(control, "get_progress_indicators")}
            if {"runConfiguration", "backgroundCommand"} <= kinds:
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"run and background command not both running: {kinds}")
        busy = measure(server, args.requests)
        still = {i["kind"] for i in server.call(control, "get_progress_indicators")}
        report = server.call(control, "get_run_output", configName="Chatty Task")
        server.call(control, "stop_run_configuration", configName="Chatty Task")
        thread.join()
        result = background["result"]
        assert isinstance(result, dict) and isinstance(report, dict)

    print(
        "GET /api/status latency, jupyter server + jupyter_mcp (shared 2-core machine, under load)"
    )
    print(f"{'phase':<44}{'n':>6}{'p50 ms':>10}{'p99 ms':>10}{'max ms':>10}")
    for label, samples in (
        ("idle (baseline, same run)", idle),
        ("run configuration + background command", busy),
    ):
        p50, p99, worst = summary(samples)
        print(f"{label:<44}{len(samples):>6}{p50:>10.1f}{p99:>10.1f}{worst:>10.1f}")
    print(f"target: p99 < 50 ms while busy -> {'met' if summary(busy)[1] < 50 else 'NOT met'}")
    print(
        f"during the busy phase: still running at the end = {sorted(still)}; run output so far "
        f"{report['nextOffset']} chars; background stdout {result.get('stdoutBytes')} bytes "
        f"read, capped at {result.get('outputCapBytes')} (truncated={result['truncated']})"
    )


if __name__ == "__main__":
    main()
