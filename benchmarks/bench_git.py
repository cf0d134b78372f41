"""Git tools over seed REST versus running the git command line directly.

A repository with 2,000 files and 200 commits, 50 files modified and 20 untracked. Each tool is
timed through a real server (one keep-alive connection), alternating call by call with the
equivalent plain ``git`` subprocess, which is the floor any git-backed tool can reach. The
machine is shared, so the absolute figures carry its load; the overhead column is what the
tool adds on top of git (HTTP, repository discovery, the lock, parsing).

    .venv/bin/python benchmarks/bench_git.py [--calls 100]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _server import jupyter_server, percentiles  # noqa: E402

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.org",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.org",
}


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, env=ENV, check=True, capture_output=True, text=True
    ).stdout


def make_repo(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    for d in range(20):
        folder = root / f"pkg{d}"
        folder.mkdir()
        for f in range(100):
            (folder / f"mod{f}.py").write_text(f"VALUE = {d * 100 + f}\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Initial import")
    target = root / "pkg0" / "mod0.py"
    for i in range(199):
        target.write_text(f"VALUE = {i + 1000}\n")
        git(root, "commit", "-q", "-am", f"Change {i}")
    for f in range(50):
        (root / "pkg1" / f"mod{f}.py").write_text("changed\n")
    for f in range(20):
        (root / f"new{f}.txt").write_text("new\n")


CASES = [
    (
        "get_project_vcs_status",
        {},
        ["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"],
    ),
    (
        "get_file_history",
        {"pathInProject": "pkg0/mod0.py", "maxEntries": 50},
        ["git", "log", "--follow", "-n50", "--format=%H %an %at %B", "--", "pkg0/mod0.py"],
    ),
    (
        "get_file_diff",
        {"pathInProject": "pkg0/mod0.py", "commit1": "HEAD~10", "commit2": "HEAD"},
        ["git", "diff", "HEAD~10", "HEAD", "--", "pkg0/mod0.py"],
    ),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_repo(root)
        with jupyter_server(root) as server:
            conn = server.connection()
            print("Machine under load (shared); figures in milliseconds.")
            print(f"{'tool':<24} {'ours p50':>9} {'ours p99':>9} {'git p50':>9} {'git p99':>9}")
            for tool, arguments, command in CASES:
                ours: list[float] = []
                theirs: list[float] = []
                for i in range(args.calls + 5):
                    t0 = time.perf_counter()
                    server.call(conn, tool, **arguments)
                    t1 = time.perf_counter()
                    subprocess.run(command, cwd=root, env=ENV, check=True, capture_output=True)
                    t2 = time.perf_counter()
                    if i >= 5:  # warm-up
                        ours.append(t1 - t0)
                        theirs.append(t2 - t1)
                o50, o99 = percentiles(ours)
                g50, g99 = percentiles(theirs)
                print(f"{tool:<24} {o50:9.2f} {o99:9.2f} {g50:9.2f} {g99:9.2f}")


if __name__ == "__main__":
    main()
