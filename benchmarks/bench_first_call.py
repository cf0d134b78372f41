"""Benchmark: the first call of each tool group right after the server starts, beside the second.

Builds a small project (``--files`` Python modules, a notebook, a git repository, a
``tasks.json`` and a ``pyproject.toml``), and for each tool group starts a fresh ``jupyter
server`` on it (token auth, jupyter_mcp enabled), waits only until ``GET /api/status`` answers,
then times the group's first call and its second call through seed REST (``POST
/mcp/<tool>``), side by side. A fresh server per group, so that no group's first call is warmed
by another's. Target: every first call ≤ 300 ms.

The figures are wall-clock on whatever machine runs this (a shared, busy machine makes them
noisy; compare the columns of one run).

    .venv/bin/python benchmarks/bench_first_call.py [--files 10] [--rounds 1] [--no-cold]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _server import Server, jupyter_server  # noqa: E402

TARGET_MS = 300.0

#: One representative call per tool group: (group, tool, arguments).
GROUPS: list[tuple[str, str, dict[str, Any]]] = [
    ("files", "get_file_text_by_path", {"pathInProject": "pkg/module_0.py"}),
    ("files (notebook)", "get_file_text_by_path", {"pathInProject": "analysis.ipynb"}),
    ("search content", "search_in_files_content", {"searchText": "helper"}),
    ("search names", "find_files_by_name_substring", {"nameSubstring": "module"}),
    ("code", "get_symbols_in_file", {"pathInProject": "pkg/module_0.py"}),
    ("git", "get_project_vcs_status", {}),
    ("project", "get_project_dependencies", {}),
    ("terminal", "execute_terminal_command", {"command": "echo hi"}),
    ("runs", "get_run_configurations", {}),
    ("progress", "get_progress_indicators", {}),
    ("debug", "get_debugger_breakpoints", {}),
]

NOTEBOOK = """{
 "cells": [
  {"cell_type": "markdown", "metadata": {}, "source": ["# Analysis"]},
  {"cell_type": "code", "execution_count": null, "metadata": {}, "outputs": [],
   "source": ["from pkg.module_0 import helper\\n", "helper(2)"]}
 ],
 "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                             "language": "python"}},
 "nbformat": 4, "nbformat_minor": 5
}
"""


def make_project(root: Path, files: int) -> None:
    """A small project: modules, a notebook, tasks, a pyproject and one git commit."""
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for i in range(files):
        (pkg / f"module_{i}.py").write_text(
            f'"""Module {i}."""\n\n\ndef helper(value):\n    return value * {i}\n\n\n'
            f"class Thing{i}:\n    def run(self):\n        return helper({i})\n"
        )
    (root / "analysis.ipynb").write_text(NOTEBOOK)
    (root / ".vscode").mkdir()
    (root / ".vscode" / "tasks.json").write_text(
        '{"version": "2.0.0", "tasks": [{"label": "Hello", "type": "shell", "command": "echo"}]}'
    )
    (root / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "0"\ndependencies = ["requests>=2"]\n'
    )
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@example.org",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@example.org",
    }
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "start"]):
        subprocess.run(cmd, cwd=root, env=env, check=True)


def timed_call(server: Server, conn: Any, tool: str, arguments: dict[str, Any]) -> float:
    started = time.perf_counter()
    server.call(conn, tool, **arguments)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10, help="Python modules in the project")
    parser.add_argument("--rounds", type=int, default=1, help="fresh servers per group")
    parser.add_argument("--only", default="", help="comma-separated group names to run")
    parser.add_argument(
        "--no-cold", action="store_true", help="skip the servers started without warm start"
    )
    parser.add_argument(
        "--later", type=float, default=2.0, help="seconds after start of the 'later' first call"
    )
    args = parser.parse_args()
    wanted = {g.strip() for g in args.only.split(",") if g.strip()}

    rows: list[tuple[str, str, list[float], list[float]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        make_project(root, args.files)
        for group, tool, arguments in GROUPS:
            if wanted and group not in wanted:
                continue
            firsts: list[float] = []
            seconds: list[float] = []
            laters: list[float] = []
            colds: list[float] = []
            for round_ in range(args.rounds):
                for kind, into in (("now", firsts), ("later", laters), ("cold", colds)):
                    if kind == "cold" and args.no_cold:
                        continue
                    # Fresh caches per server: "first" means nothing of a previous one is reused.
                    cache = Path(tmp) / f"cache-{group}-{round_}-{kind}"
                    os.environ["XDG_CACHE_HOME"] = str(cache)
                    flag = f"--JupyterMCP.warm_start={kind != 'cold'}"
                    with jupyter_server(root, flag) as server:
                        conn = server.connection()
                        if kind == "later":
                            time.sleep(args.later)
                        into.append(timed_call(server, conn, tool, arguments))
                        if kind == "now":
                            seconds.append(timed_call(server, conn, tool, arguments))
                        conn.close()
            rows.append((group, tool, firsts, seconds, laters, colds))

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"First call of each tool group on a fresh server ({args.files}-module project, "
        f"{args.rounds} round(s), load average {load:.1f} on {os.cpu_count()} cores)"
    )
    later_label = f"1st +{args.later:g}s"
    print(
        f"{'group':<18} {'tool':<30} {'1st ms':>8} {'2nd ms':>8} {later_label:>9} "
        f"{'1st cold':>9}  target 1st <= {TARGET_MS:g}"
    )
    worst = worst_later = 0.0
    for group, tool, firsts, seconds, laters, colds in rows:
        first, second = statistics.median(firsts), statistics.median(seconds)
        later = statistics.median(laters)
        cold = f"{statistics.median(colds):>9.1f}" if colds else f"{'-':>9}"
        worst, worst_later = max(worst, first), max(worst_later, later)
        verdict = "ok" if first <= TARGET_MS else "OVER"
        print(
            f"{group:<18} {tool:<30} {first:>8.1f} {second:>8.1f} {later:>9.1f} {cold}  {verdict}"
        )
    print(
        f"(1st: the first call the moment the server answers; 2nd: the call after it; "
        f"1st +{args.later:g}s: the first call {args.later:g} s after the server answers; "
        "1st cold: the first call on a server started with JupyterMCP.warm_start=False)"
    )
    print(f"slowest first call {args.later:g} s after start: {worst_later:.1f} ms")
    print(f"slowest first call: {worst:.1f} ms (target {TARGET_MS:g} ms)")


if __name__ == "__main__":
    main()
