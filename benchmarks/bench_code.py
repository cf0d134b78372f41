"""Benchmark: find_references through a real Jupyter server vs bare jedi in a fresh process.

Generates a project of ``--modules`` (default 1,000) Python modules in 20 packages, each of
which imports ``helper`` from ``core.py`` and calls it, starts ``jupyter server`` on it (token
auth, jupyter_mcp enabled) and prints, from one run and side by side:

* ``find_references`` on ``helper``'s definition through ``POST /mcp/find_references``: the
  first (cold) call, repeated calls (warm), and a call after one module changed;
* bare ``jedi.Script(path=core.py, project=jedi.Project(root)).get_references(...)`` timed in
  a fresh Python process on the same query, twice: with jedi's defaults (which stop after
  parsing 30 files, so they find only a fraction of the references) and with those limits
  lifted, which is the same work the server does;
* p50/p99 of ``GET /api/status`` polled on another connection while the server works.

Then the same for a real ``src/``-layout project: click 8.1.7's sdist (fetched from PyPI once,
hash-checked, cached in the repository's ``.cache/sdists``), ``find_references`` on
``format_filename`` in ``src/click/utils.py`` (20 references across ``src/``, ``tests/`` and
``examples/``), against bare ``jedi.Project(root)`` on the same query.

Every process gets its own empty jedi/parso cache directory (``XDG_CACHE_HOME``), so "cold"
means cold. Usage: ``python benchmarks/bench_code.py [--modules 1000] [--runs 5] [--no-real]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _server import jupyter_server, percentiles  # noqa: E402

CORE = '''\
"""The widely used helper."""


def helper(value, scale=1):
    """Scale a value."""
    return value * scale
'''

MODULE = '''\
"""Generated module {i}."""

from core import helper

FACTOR = {i}


class Thing{i}:
    """A thing."""

    def __init__(self, value):
        self.value = value

    def scaled(self):
        return helper(self.value, FACTOR)

    def describe(self):
        return "thing {i}: " + str(self.scaled())


def compute_{i}(values):
    total = 0
    for value in values:
        total += helper(value)
    return total + Thing{i}(total).scaled()
'''

BARE_JEDI = """
import json, math, sys, time
import jedi
from jedi.inference import references
if sys.argv[2] == "lifted":
    references._PARSED_FILE_LIMIT = math.inf
    references._OPENED_FILE_LIMIT = math.inf
root, path, line, character = sys.argv[1], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
started = time.perf_counter()
project = jedi.Project(root, added_sys_path=[root]) if sys.argv[6] == "flat" else jedi.Project(root)
script = jedi.Script(path=root + "/" + path, project=project)
names = script.get_references(line + 1, character, include_builtins=False)
elapsed = time.perf_counter() - started
print(json.dumps({"seconds": elapsed, "count": len(names)}))
"""


def build_tree(root: Path, modules: int) -> None:
    """``core.py`` and ``modules`` modules in 20 packages that import and call ``helper``."""
    (root / "core.py").write_text(CORE)
    packages = 20
    for p in range(packages):
        (root / f"pkg{p:02d}").mkdir()
        (root / f"pkg{p:02d}" / "__init__.py").write_text("")
    for i in range(modules):
        (root / f"pkg{i % packages:02d}" / f"mod{i:04d}.py").write_text(MODULE.format(i=i))


#: The real src/-layout project: (name, version, sha256 of the sdist), and the query.
REAL = ("click", "8.1.7", "ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de")
REAL_QUERY = {"pathInProject": "src/click/utils.py", "line": 403, "character": 4}
GENERATED_QUERY = {"pathInProject": "core.py", "line": 3, "character": 4}


def fetch_sdist(name: str, version: str, sha256: str) -> Path:
    """The unpacked sdist, downloaded once through PyPI's simple index into .cache/sdists."""
    cache = Path(__file__).resolve().parents[1] / ".cache" / "sdists"
    unpacked = cache / f"{name}-{version}"
    if (unpacked / ".complete").is_file():
        return unpacked
    cache.mkdir(parents=True, exist_ok=True)
    tarball = cache / f"{name}-{version}.tar.gz"
    if not tarball.is_file() or hashlib.sha256(tarball.read_bytes()).hexdigest() != sha256:
        request = urllib.request.Request(
            f"https://pypi.org/simple/{name}/",
            headers={"Accept": "application/vnd.pypi.simple.v1+json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            files = json.loads(response.read())["files"]
        url = next(f["url"] for f in files if f["filename"] == tarball.name)
        with urllib.request.urlopen(url, timeout=60) as response:
            data = response.read()
        if hashlib.sha256(data).hexdigest() != sha256:
            raise SystemExit(f"{tarball.name} from PyPI does not have the pinned sha256")
        tarball.write_bytes(data)
    shutil.rmtree(unpacked, ignore_errors=True)
    with tarfile.open(tarball) as archive:
        archive.extractall(cache)  # a pinned, hash-checked archive
    (unpacked / ".complete").write_text("")
    return unpacked


def bare_jedi(
    root: Path, mode: str, query: dict[str, object] = GENERATED_QUERY, layout: str = "flat"
) -> dict[str, float]:
    """Time the same query in a fresh interpreter with an empty jedi cache."""
    cache = tempfile.mkdtemp(prefix="bench-code-bare-cache-")
    where = [str(query["pathInProject"]), str(query["line"]), str(query["character"]), layout]
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(BARE_JEDI), str(root), mode, *where],
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_CACHE_HOME": cache},
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def server_round(
    root: Path,
    runs: int,
    latencies: list[float],
    query: dict[str, object] = GENERATED_QUERY,
    changed_path: str = "pkg00/mod0000.py",
    addition: str = "\n\ndef extra():\n    return helper(0)\n",
) -> dict[str, object]:
    """One fresh server: cold call, repeated calls, a call after one module changed."""
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="bench-code-server-cache-")
    with jupyter_server(root) as server:
        stop = threading.Event()

        def poll() -> None:
            conn = server.connection()
            while not stop.is_set():
                started = time.perf_counter()
                server.request(conn, "GET", "/api/status")
                latencies.append(time.perf_counter() - started)
                time.sleep(0.01)

        conn = server.connection()
        server.request(conn, "GET", "/api/status")
        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        started = time.perf_counter()
        cold = server.call(conn, "find_references", **query)
        cold_s = time.perf_counter() - started
        warm_times = []
        for _ in range(runs):
            started = time.perf_counter()
            warm = server.call(conn, "find_references", **query)
            warm_times.append(time.perf_counter() - started)
        assert warm == cold, "a repeated call must give the same answer"
        changed = root / changed_path
        original = changed.read_text()
        changed.write_text(original + addition)  # one more reference
        started = time.perf_counter()
        after = server.call(conn, "find_references", **query)
        after_s = time.perf_counter() - started
        changed.write_text(original)
        stop.set()
        poller.join()
    return {
        "cold": cold_s,
        "count": len(cold["references"]),
        "warm": statistics.median(warm_times),
        "after": after_s,
        "after_count": len(after["references"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--modules", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5, help="repeated calls per server")
    parser.add_argument(
        "--rounds", type=int, default=3, help="fresh servers and fresh bare-jedi processes"
    )
    parser.add_argument("--no-real", action="store_true", help="skip the real src/ project")
    args = parser.parse_args()
    generated(args)
    if not args.no_real:
        real(args)


def generated(args: argparse.Namespace) -> None:
    """The generated flat project of ``--modules`` modules."""
    with tempfile.TemporaryDirectory(prefix="bench-code-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        build_tree(root, args.modules)
        expected = 1 + 3 * args.modules  # the definition; an import and two calls per module
        print(f"project: {args.modules} modules importing core.helper ({expected} references)")
        print(
            "machine: 2 cores shared with other work, so figures are under load; bare jedi and "
            f"the server alternate over {args.rounds} rounds\n"
        )
        bare_default = bare_jedi(root, "default")
        latencies: list[float] = []
        rounds = []
        for number in range(args.rounds):
            bare = bare_jedi(root, "lifted")
            ours = server_round(root, args.runs, latencies)
            rounds.append((bare, ours))
            print(
                f"round {number + 1}: bare jedi (limits lifted) {bare['seconds']:.2f} s, "
                f"server cold {ours['cold']:.2f} s, repeated {ours['warm']:.3f} s",
                flush=True,
            )

        def median(values: list[float]) -> float:
            return statistics.median(values)

        cold_s = median([o["cold"] for _, o in rounds])
        warm_s = median([o["warm"] for _, o in rounds])
        after_s = median([o["after"] for _, o in rounds])
        bare_s = median([b["seconds"] for b, _ in rounds])
        count = rounds[0][1]["count"]
        rows = [
            ("server find_references, cold (first call)", cold_s, count),
            (f"server find_references, repeated (median of {args.runs})", warm_s, count),
            (
                "server find_references, after 1 module changed",
                after_s,
                rounds[0][1]["after_count"],
            ),
            (
                "bare jedi, fresh process, jedi defaults",
                bare_default["seconds"],
                bare_default["count"],
            ),
            ("bare jedi, fresh process, file limits lifted", bare_s, rounds[0][0]["count"]),
        ]
        print(f"\nmedians over {args.rounds} rounds{'':26} {'seconds':>9} {'references':>11}")
        for label, seconds, n in rows:
            print(f"{label:52} {seconds:9.3f} {n:11d}")
        p50, p99 = percentiles(latencies)
        print()
        print(
            f"cold vs bare jedi (limits lifted, same answer): {cold_s / bare_s:.2f}x"
            "   (target <= 1.2x)"
        )
        print(
            "  (cold = the whole first call: the server starts its code-analysis worker then, "
            "nothing is pre-started)"
        )
        print(f"cold vs repeated: {cold_s / warm_s:.0f}x faster when repeated   (target >= 5x)")
        print(
            f"/api/status while the server works: p50 {p50:.1f} ms, p99 {p99:.1f} ms, "
            f"max {max(latencies) * 1000:.1f} ms over {len(latencies)} requests"
            "   (target p99 < 50 ms)"
        )


def real(args: argparse.Namespace) -> None:
    """click's sdist: a src/ layout, whose package the interpreter may also have installed."""
    name, version, sha256 = REAL
    source = fetch_sdist(name, version, sha256)
    with tempfile.TemporaryDirectory(prefix="bench-code-real-") as tmp:
        root = Path(tmp) / "project"
        shutil.copytree(source, root, ignore=shutil.ignore_patterns(".complete"))
        files = sum(1 for _ in root.rglob("*.py"))
        print(
            f"\nreal project: {name} {version} (src/ layout, {files} Python files), "
            "find_references on format_filename in src/click/utils.py"
        )
        latencies: list[float] = []
        rounds = []
        for number in range(args.rounds):
            bare = bare_jedi(root, "default", REAL_QUERY, "src")
            ours = server_round(
                root,
                args.runs,
                latencies,
                REAL_QUERY,
                "src/click/types.py",
                "\n\ndef extra():\n    return format_filename('x')\n",
            )
            rounds.append((bare, ours))
            print(
                f"round {number + 1}: bare jedi {bare['seconds']:.2f} s ({bare['count']:.0f}), "
                f"server cold {ours['cold']:.2f} s, repeated {ours['warm']:.3f} s",
                flush=True,
            )
        cold_s = statistics.median([o["cold"] for _, o in rounds])
        warm_s = statistics.median([o["warm"] for _, o in rounds])
        after_s = statistics.median([o["after"] for _, o in rounds])
        bare_s = statistics.median([b["seconds"] for b, _ in rounds])
        rows = [
            ("server find_references, cold (first call)", cold_s, rounds[0][1]["count"]),
            (
                f"server find_references, repeated (median of {args.runs})",
                warm_s,
                rounds[0][1]["count"],
            ),
            (
                "server find_references, after 1 module changed",
                after_s,
                rounds[0][1]["after_count"],
            ),
            ("bare jedi, fresh process, jedi.Project(root)", bare_s, rounds[0][0]["count"]),
        ]
        print(f"\nmedians over {args.rounds} rounds{'':26} {'seconds':>9} {'references':>11}")
        for label, seconds, n in rows:
            print(f"{label:52} {seconds:9.3f} {n:11.0f}")
        print(f"\ncold vs bare jedi: {cold_s / bare_s:.2f}x   (target <= 1.2x)")
        print(f"cold vs repeated: {cold_s / warm_s:.0f}x faster when repeated   (target >= 5x)")


if __name__ == "__main__":
    main()
