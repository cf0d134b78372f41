"""A soak: a mixed agent workload for a given time, and whether the server comes back to where
it started.

Starts a real ``jupyter server`` with jupyter_mcp (token auth) on a temporary git project, with
a small probe extension (``_soak_probe.py``) that tells what only the server process knows, and:

1. **start-up**: samples the server at rest, after its warm start;
2. **warm-up**: every agent does its work once, so that what the server makes once and keeps
   exists (the agents' notebook kernels, the project terminal, the worker processes, the thread
   pools at the agents' concurrency): the level after it is the **baseline**;
3. **load**, for ``--minutes``: ``--agents`` agents of each kind at once (cells run in their own
   notebook and kernel, snippets and variables; file reads, edits and searches; git status,
   history, diffs and commits; background commands, terminal commands and run configurations;
   MCP sessions opened and closed in both protocol eras, seed REST calls, and sessions
   abandoned without a goodbye, as a crashed client leaves them), the server sampled every
   ``--interval`` seconds;
4. **after**: the agents stop (their notebooks keep their kernels); the server is sampled until
   every count is back at the baseline, for at most ``--settle`` seconds;
5. with ``--rounds`` above 1, the load and the wait again (the same agents, their notebooks
   and files): what a round leaves behind shows as growth across rounds.

Each sample: the server's resident memory (MiB), open file descriptors, threads (and of them
the pools' — the tool calls', the event loop executor's, the file-lock waiters' and AnyIO's,
which keep their threads up to a bound — and the others),
asyncio tasks, child processes, kernels, the MCP SDK's live session objects and the live request
handlers, jupyter-collaboration's open document rooms and file loaders (and the rooms' documents'
size), the objects Python's collector tracks and (``tracemalloc``, which the benchmark turns
on in the server) the Python heap. The verdict says which counts did not return to the baseline,
whether the heap came back within :data:`HEAP_MARGIN_MIB` of it and the tracked objects within
:data:`OBJECTS_MARGIN`, whether the resident memory grew across the last round (beyond
:data:`RSS_MARGIN_MIB`), and whether the live handlers ended above every round before. Two
high-water marks are allowed for, and printed: jupyter_client's replay guards, which fill up
to their bound, and the interpreter's table of interned strings, which grows in steps and never
shrinks. Then come the allocation
sites that grew most since the baseline (and what holds the sessions or handlers left), and the
agents' errors by tool and message. Abandoned sessions end after ``--session-idle`` seconds (the
server's ``JupyterMCP.session_idle_timeout``, set short here so that their end falls in the
soak).

With ``--native``, memray tracks the native allocations (C libraries' and the interpreter's own
malloc and mmap, not Python's object allocators) over the last round, and the sites of those it
made and did not free are printed: what native code holds that tracemalloc cannot see. The
resident memory of that run is memray's too, so its verdict is not the soak's figure.

    .venv/bin/python benchmarks/soak.py [--minutes 10] [--rounds 1] [--interval 60] [--agents 2]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _server import Server, jupyter_server  # noqa: E402
from bench_mcp import RawSession  # noqa: E402

#: The counts that must come back to the baseline, in the order they are printed. The live
#: request handlers are printed, not held to it: what lives as long as a terminal, a
#: collaborative document or a run configuration's last run keeps the context (and with it
#: the handler) of the request that made it.
#: The shared documents' rooms (and file loaders) the agents' notebooks open close once the
#: agents leave and :data:`ROOM_CLEANUP_DELAY` has passed (lab/rooms.py).
COUNTS = ("fds", "other_threads", "tasks", "children", "kernels", "sdk_sessions", "rooms")
COUNTS += ("file_loaders",)
#: jupyter-collaboration's ``document_cleanup_delay`` for the soak's server (seconds; 60 by
#: default): short, so that the rooms close within the wait after each round.
ROOM_CLEANUP_DELAY = 5
#: How far above the baseline the traced Python heap may end (MiB): what first use caches.
HEAP_MARGIN_MIB = 4.0
#: How far above the baseline the collector's tracked objects may end (a fraction).
OBJECTS_MARGIN = 0.03
#: How much the resident memory may grow across the last round (MiB): the allocator's slack.
RSS_MARGIN_MIB = 2.0
#: What the probe's ``?trim`` tells of glibc's free memory after the trim (MiB): all of it,
#: and what is in chunks smaller than a page (which the trim cannot give back: resident).
MALLOC_FREE = ("malloc_free_mib", "malloc_free_small_mib")
#: What the probe's ``?trim`` tells of pymalloc, CPython's small-object allocator (MiB).
PYMALLOC = ("pymalloc_arenas_mib", "pymalloc_used_mib", "pymalloc_free_mib")
PYMALLOC += ("pymalloc_unused_pools_mib",)
#: Native allocation sites printed from a ``--native`` capture.
NATIVE_LINES = 15


#: The kinds of agents, each a method of :class:`Agents`.
KINDS = ("notebook", "files", "git", "commands", "sessions")


def project(root: Path) -> None:
    """A git project with modules to search, files to edit and a run configuration."""
    for n in range(60):
        (root / f"module_{n}.py").write_text(f"def compute_{n}(x):\n    return x * {n}\n")
    (root / ".vscode").mkdir()
    # One configuration per command agent: a configuration runs once at a time, and two
    # agents sharing one were refused ("already running") whenever their runs met.
    echo = [{"label": f"Echo {n}", "type": "shell", "command": "echo ran"} for n in range(10)]
    tasks = {"version": "2.0.0", "tasks": echo}
    (root / ".vscode" / "tasks.json").write_text(json.dumps(tasks))
    git = ["git", "-C", str(root), "-c", "user.name=soak", "-c", "user.email=soak@example.org"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "A project to soak"], check=True)


def _children(pid: int) -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            if fields[1] == str(pid) and fields[0] != "Z":
                count += 1
    return count


def smaps(pid: int) -> dict[str, float]:
    """The process's resident memory by mapping (MiB): by file, ``[heap]`` (the main malloc
    arena), ``[anon]`` (mmap'd memory: other threads' arenas, big blocks, Rust's allocator)."""
    found: collections.Counter[str] = collections.Counter()
    name = "[anon]"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5 and not fields[0].endswith(":"):
            name = fields[5] if len(fields) > 5 else "[anon]"
        elif fields and fields[0] == "Rss:":
            found[name] += int(fields[1]) / 1024
    return dict(found)


def sample(server: Server, http: httpx2.Client) -> dict[str, float]:
    """One look at the server process: from /proc, its probe and its kernels API."""
    pid = server.proc.pid
    status = Path(f"/proc/{pid}/status").read_text()
    rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
    probe = http.get(f"{server.url}/soak-probe").json()
    return {
        "rss_mib": rss / 1024,
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        **probe,
        "children": _children(pid),
        "kernels": len(http.get(f"{server.url}/api/kernels").json()),
    }


@dataclass
class Report:
    """The samples of one soak, by label, and how the agents did."""

    samples: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    calls: int = 0
    errors: list[str] = field(default_factory=list)
    #: The allocation sites that grew most from the baseline to the end (tracemalloc's).
    growth: str = ""
    #: What holds the SDK sessions and handlers that did not return, by kind (the probe's).
    holders: dict[str, str] = field(default_factory=dict)
    #: The errors and warnings the server logged with a traceback (each one formatted fills
    #: linecache with the lines of its files: tracemalloc's growth shows it).
    tracebacks: list[str] = field(default_factory=list)
    #: The errors and warnings it logged without one (a room that failed to start, say).
    warnings: list[str] = field(default_factory=list)
    #: The resident memory by mapping after each round (malloc_trim'd first), by label.
    maps: list[tuple[str, dict[str, float]]] = field(default_factory=list)
    #: Where the interned-strings table tracemalloc sees was allocated, by label.
    interned_sites: dict[str, list[str]] = field(default_factory=dict)
    #: With ``native``: the native allocations made over the last round and not freed after
    #: it, by site (MiB, allocations, where), most first (:func:`native_kept`).
    native: list[tuple[float, int, str]] = field(default_factory=list)

    def of(self, label: str) -> dict[str, float]:
        return next(s for name, s in self.samples if name == label)

    def not_returned(self) -> dict[str, tuple[float, float]]:
        """The counts above their baseline after the load (baseline, after); the pools'
        threads beyond their bound count too."""
        baseline, after = self.of("baseline"), self.of("after")
        missing = {k: (baseline[k], after[k]) for k in COUNTS if after[k] > baseline[k]}
        for pool in ("tool_threads", "executor_threads", "lock_threads", "anyio_threads"):
            if after[pool] > after[f"{pool}_bound"]:
                missing[pool] = (after[f"{pool}_bound"], after[pool])
        return missing

    def memory_over(self) -> dict[str, tuple[float, float]]:
        """What of the memory ended above its bound (bound, after): the heap and the tracked
        objects against the baseline, the resident memory against the end of the round before
        the last (only with two rounds or more)."""
        baseline, after = self.of("baseline"), self.of("after")
        over = {}
        # jupyter_client's replay guards fill up to their bound and stay: their growth is
        # allowed for, up to that bound (printed with the verdict), not counted as a leak.
        bounded = min(
            max(after.get("digests_mib", 0) - baseline.get("digests_mib", 0), 0),
            after.get("digests_bound_mib", 0),
        )
        # The interpreter's table of interned strings grows in steps and never shrinks: the
        # high-water mark of the strings interned at once (the probe's ?interned), allowed
        # for as the step it took, not counted as a leak (printed with the verdict).
        table = interned_growth(baseline, after)
        heap_bound = baseline.get("heap_mib", 0) + HEAP_MARGIN_MIB + bounded + table
        if "heap_mib" in after and after["heap_mib"] > heap_bound:
            over["heap_mib"] = (heap_bound, after["heap_mib"])
        if after["objects"] > baseline["objects"] * (1 + OBJECTS_MARGIN):
            over["objects"] = (baseline["objects"] * (1 + OBJECTS_MARGIN), after["objects"])
        rounds = [found for label, found in self.samples if label.startswith("after round")]
        # After malloc_trim(0) (the probe's ?trim), when both ends have it: what glibc kept
        # free is no leak: the trim gives back the whole pages of its free chunks, and what it
        # cannot, chunks under a page, stays resident (their growth is allowed for). Nor what
        # pymalloc keeps free in arenas that some object still pins (it gives an arena back
        # only once it is empty), nor tracemalloc's own records: the growth of each across
        # the round is allowed for, and printed. What malloc's callers hold is not in any.
        rss = "trimmed_rss_mib" if rounds and "trimmed_rss_mib" in rounds[-1] else "rss_mib"
        if rounds:
            before = rounds[-1]
            rss_bound = before[rss] + RSS_MARGIN_MIB + interned_growth(before, after)
            rss_bound += pymalloc_free_growth(before, after) + tracemalloc_growth(before, after)
            rss_bound += glibc_small_free_growth(before, after)
            if after.get(rss, 0) > rss_bound:
                over[rss] = (rss_bound, after[rss])
        # The handlers left are those whose request a long-lived object took the context of
        # (a file descriptor the event loop watches keeps the Context, and in it the handler,
        # of the request that made the loop watch it): which request that was varies
        # from round to round (18, 17, 18 in a 10 min x 3 soak; 13 at the baseline, then 10,
        # 12 in a 10 min x 2). A leak ends every round with more, so the end is held to the
        # most the baseline (the warm-up's end) or any round before ended with.
        most = max(found["handlers"] for found in [baseline, *rounds])
        if rounds and after["handlers"] > most:
            over["handlers"] = (most, after["handlers"])
        return over

    def errors_by_kind(self) -> list[tuple[int, str]]:
        """The agents' errors, the same tool and message counted together (its numbers, times
        and ids aside), most first."""
        kinds = collections.Counter(re.sub(r"\d+", "N", e) for e in self.errors)
        return [(n, e) for e, n in kinds.most_common()]


def pymalloc_free_growth(then: dict[str, float], now: dict[str, float]) -> float:
    """How much of pymalloc's arenas more was free between two samples (MiB, 0 where they do
    not tell): free blocks in its pools and pools no object uses, which it keeps for the next
    objects while an arena holds any object. What objects use is not in it: a leak of
    objects grows that (and the traced heap), not this."""
    free = ("pymalloc_free_mib", "pymalloc_unused_pools_mib")
    if not all(k in then and k in now for k in free):
        return 0.0
    return max(sum(now[k] for k in free) - sum(then[k] for k in free), 0)


def glibc_small_free_growth(then: dict[str, float], now: dict[str, float]) -> float:
    """How much more of glibc's heap was free in chunks under a page between two samples after
    the trim (MiB, 0 where they do not tell): fragmentation, memory ``malloc_trim`` cannot give
    back because no whole page of it is free. What callers hold (malloc in use) is not in it:
    a native leak grows that, not this. In a 10 min x 3 soak it grew +8.3, then +3.4 MiB, the
    trimmed RSS +17.8, then +4.4."""
    key = "malloc_free_small_mib"
    if key not in then or key not in now:
        return 0.0
    return max(now[key] - then[key], 0)


def tracemalloc_growth(then: dict[str, float], now: dict[str, float]) -> float:
    """How much tracemalloc's own memory grew between two samples (MiB): the instrument's
    records (every distinct traceback it saw), which a server not soaked does not have."""
    return max(now.get("tracemalloc_mib", 0) - then.get("tracemalloc_mib", 0), 0)


def interned_growth(then: dict[str, float], now: dict[str, float]) -> float:
    """How much the interned-strings table that tracemalloc sees grew between two samples
    (MiB; 0 where it was not asked for)."""
    return max(now.get("interned_table_mib", 0) - then.get("interned_table_mib", 0), 0)


#: Native frames of the allocator itself, which say nothing of who allocated.
_ALLOCATOR = re.compile(r"malloc|calloc|realloc|memalign|memray|^operator new|^<unknown>$")


def native_kept(capture: Path, lines: int = NATIVE_LINES) -> list[tuple[float, int, str]]:
    """The allocations of a memray capture (the probe's ``?native``) not freed when it ended:
    (MiB, allocations, where), most first, at most ``lines`` (and the rest as one line).

    Where: "Python objects", one line for all that Python's allocators made through
    tracemalloc's hooks (objects over pymalloc's 512 bytes go to malloc: tracemalloc sees
    them, the heap figure has them and its growth tells their sites); "tracemalloc's own
    records" for what the instrument holds itself; else the innermost two native frames
    outside the allocator, and the Python line that called into native code where memray
    knows it."""
    from memray import FileReader

    sites: collections.Counter[str] = collections.Counter()
    counts: collections.Counter[str] = collections.Counter()
    with contextlib.closing(FileReader(capture)) as reader:
        for record in reader.get_leaked_allocation_records(merge_threads=True):
            frames = record.native_stack_trace(max_stacks=16)
            functions = [function for function, _, _ in frames]
            python = [f"{Path(f).name}:{line} {fn}" for fn, f, line in record.stack_trace(1)]
            if any(f.startswith("tracemalloc_alloc") for f in functions):
                where = "Python objects (tracemalloc's heap has them)"
            elif any(f.startswith("traceback_new") or "tracemalloc" in f for f in functions):
                where = "tracemalloc's own records"
            else:
                native = [
                    f"{function} ({Path(file).name})"
                    for function, file, _ in frames
                    if not _ALLOCATOR.search(function)
                ]
                where = " <- ".join(["native", *native[:2], *python[:1]])
            sites[where] += record.size
            counts[where] += record.n_allocations
    kept = [(size / 2**20, counts[where], where) for where, size in sites.most_common()]
    if len(kept) > lines:
        rest = kept[lines:]
        kept = kept[:lines]
        kept.append((sum(r[0] for r in rest), sum(r[1] for r in rest), f"{len(rest)} more sites"))
    return kept


class Agents:
    """The workload: agents of each kind, each with its own session."""

    def __init__(self, server: Server, report: Report) -> None:
        self.server = server
        self.url = server.url + "/mcp"
        self.headers = {"Authorization": f"token {server.token}"}
        self.report = report
        self.made: set[str] = set()
        self.versions = itertools.count()
        #: The kinds of agents that work (all of :data:`KINDS` unless the soak names some).
        self.kinds = KINDS

    async def make(self, client: Client, path: str, text: str) -> None:
        """Create ``path`` the first time an agent asks (the warm-up); later rounds reuse it."""
        if path not in self.made:
            self.made.add(path)
            await self.call(client, "create_new_file_with_text", pathInProject=path, text=text)

    async def call(self, client: Client, tool: str, **arguments: Any) -> Any:
        self.report.calls += 1
        try:
            result = await client.call_tool(tool, arguments)
        except Exception as e:  # counted; the agent goes on
            self.report.errors.append(f"{tool}: {type(e).__name__}: {e}"[:300])
            return None
        if result.is_error:
            self.report.errors.append(f"{tool}: {result.content[0].text}"[:300])
            return None
        if result.structured_content is not None:
            return result.structured_content
        with contextlib.suppress(ValueError):
            return json.loads(result.content[0].text)
        return result.content[0].text

    @contextlib.asynccontextmanager
    async def client(self, mode: str = "legacy") -> Any:
        async with (
            httpx2.AsyncClient(headers=self.headers, timeout=300) as http,
            Client(streamable_http_client(self.url, http_client=http), mode=mode) as client,
        ):
            yield client

    async def notebook(self, n: int, rounds: Callable[[int], bool]) -> None:
        path = f"soak_{n}.ipynb"
        async with self.client() as c:
            await self.make(c, path, "")
            for k in itertools.count():
                if not rounds(k):
                    return
                cell = await self.call(
                    c, "insert_notebook_cell", pathInProject=path, source=f"v = {k}\nprint(v)"
                )
                if cell is not None:
                    await self.call(
                        c, "execute_notebook_cells", pathInProject=path, cellIds=[cell["cellId"]]
                    )
                    await self.call(c, "get_notebook_cell", pathInProject=path, index=0)
                    # The notebook stays short: what grows over a soak is the server's, not it.
                    await self.call(
                        c, "delete_notebook_cells", pathInProject=path, cellIds=[cell["cellId"]]
                    )
                await self.call(c, "execute_code_in_kernel", pathInProject=path, code="w = v * 2")
                await self.call(c, "get_kernel_variables", pathInProject=path, names=["w"])

    async def files(self, n: int, rounds: Callable[[int], bool]) -> None:
        own = f"notes_{n}.txt"
        async with self.client() as c:
            await self.make(c, own, "notes\n")
            for k in itertools.count():
                if not rounds(k):
                    return
                await self.call(c, "append_file_content", pathInProject=own, text="a line\n")
                await self.call(
                    c,
                    "replace_specific_text",
                    pathInProject=own,
                    searchText="a line",
                    replaceText="one line",
                )
                await self.call(c, "get_file_text_by_path", pathInProject=own)
                await self.call(c, "search_in_files_content", searchText="return x", maxResults=20)
                await self.call(c, "find_files_by_name_substring", nameSubstring="module_1")
                await self.call(c, "rewrite_file_content", pathInProject=own, text="notes\n")

    async def git(self, n: int, rounds: Callable[[int], bool]) -> None:
        own = f"git_{n}.txt"
        async with self.client() as c:
            await self.make(c, own, "version\n")
            for k in itertools.count():
                if not rounds(k):
                    return
                version = next(self.versions)
                await self.call(c, "rewrite_file_content", pathInProject=own, text=f"v{version}\n")
                await self.call(c, "get_project_vcs_status")
                await self.call(c, "get_file_diff", pathInProject=own)
                await self.call(c, "commit_changes", message=f"soak {version}", files=[own])
                await self.call(c, "get_file_history", pathInProject=own, maxEntries=5)
                await self.call(c, "get_branch_info")

    async def commands(self, n: int, rounds: Callable[[int], bool]) -> None:
        async with self.client() as c:
            for k in itertools.count():
                if not rounds(k):
                    return
                await self.call(c, "run_command_on_background", command="echo soak", timeout=60000)
                await self.call(c, "execute_terminal_command", command="echo soak")
                await self.call(c, "read_terminal_output", waitMs=5000)
                await self.call(c, "run_configuration", configName=f"Echo {n}")
                await self.call(c, "get_run_output", configName=f"Echo {n}", waitMs=30000)
                await self.call(c, "get_progress_indicators")

    async def sessions(self, n: int, rounds: Callable[[int], bool]) -> None:
        """Sessions that come and go: both eras, seed REST, and one abandoned each round."""
        async with httpx2.AsyncClient(headers=self.headers, timeout=300) as http:
            for k in itertools.count():
                if not rounds(k):
                    return
                mode = ("legacy", "auto")[k % 2]
                async with self.client(mode) as c:
                    await c.list_tools()
                    await self.call(c, "get_project_modules")
                response = await http.post(
                    f"{self.server.url}/mcp/list_files_in_folder", json={"pathInProject": "/"}
                )
                self.report.calls += 1
                if response.status_code != 200 or response.json()["error"] is not None:
                    self.report.errors.append(f"seed REST: {response.text[:300]}")
                # A client that crashes: its session opened, one call, no DELETE.
                abandoned = RawSession(http, self.server.url, "soak-abandoned")
                await abandoned.__aenter__()
                await abandoned.call_tool("get_terminal_info", {})

    async def run(self, agents: int, rounds: Callable[[int], bool]) -> None:
        kinds = [getattr(self, kind) for kind in self.kinds]
        await asyncio.gather(*(kind(n, rounds) for kind in kinds for n in range(agents)))


def once(round: int) -> bool:
    """Each agent does its work one time (the warm-up)."""
    return round == 0


def until(deadline: float) -> Callable[[int], bool]:
    """Each agent goes on until ``deadline`` (monotonic clock)."""
    return lambda round: time.monotonic() < deadline


def soak(
    minutes: float,
    interval: float,
    agents: int = 2,
    settle: float = 120,
    session_idle: float = 30,
    show: Callable[[str, dict[str, float]], None] | None = None,
    rounds: int = 1,
    trace_memory: bool = False,
    room_cleanup_delay: float | None = ROOM_CLEANUP_DELAY,
    kinds: tuple[str, ...] = KINDS,
    collaboration: bool = True,
    native: bool = False,
) -> Report:
    """Run the soak and return its samples (``show`` is called with each as it is taken).

    ``rounds`` loads of ``minutes`` each, each followed by the wait for the counts; the last
    one's end is sampled as "after", the others' as "after round N". ``trace_memory`` turns
    tracemalloc on in the server (the heap, and the growth since the baseline);
    ``room_cleanup_delay`` None keeps every room open (as before lab/rooms.py), to compare;
    ``kinds`` the agents that work (to tell which work leaves memory behind); without
    ``collaboration`` the server has jupyter-collaboration off (notebooks change in their
    files); ``native`` tracks the native allocations of the last round with memray (from its
    start to its "after" sample: what native code made over it and still holds; memray's
    own records weigh on the resident memory meanwhile)."""
    report = Report()

    def take(label: str, http: httpx2.Client, server: Server) -> dict[str, float]:
        found = sample(server, http)
        report.samples.append((label, found))
        if show is not None:
            show(label, found)
        return found

    def quiet(http: httpx2.Client, server: Server, seconds: float, level: Any = None) -> None:
        """Wait (at most ``seconds``) until the counts hold still for three samples in a row,
        or, given ``level``, until none is above it: work that has just ended (a session's
        tasks, a pool's idle thread) is let go of first."""
        deadline = time.monotonic() + seconds
        last: list[tuple[float, ...]] = []
        while time.monotonic() < deadline:
            now = sample(server, http)
            if level is not None and all(now[k] <= level[k] for k in COUNTS):
                return
            last = [*last[-2:], tuple(now[k] for k in COUNTS)]
            if level is None and len(last) == 3 and len(set(last)) == 1:
                return
            time.sleep(2)

    def interned(found: dict[str, Any], http: httpx2.Client, server: Server) -> None:
        """Add the interpreter's table of interned strings, as tracemalloc sees it."""
        table = http.get(f"{server.url}/soak-probe", params={"interned": 1}).json()
        found["interned_table_mib"] = table["interned_table_mib"]
        report.interned_sites[label_of(found)] = table["interned_table_sites"]

    def label_of(found: dict[str, Any]) -> str:
        return next(label for label, sample in report.samples if sample is found)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project(root)
        paths = (str(HERE), os.environ.get("PYTHONPATH", ""))
        env = {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}
        if trace_memory:
            env["SOAK_TRACEMALLOC"] = "1"
            frames = os.environ.get("SOAK_TRACEMALLOC_FRAMES")
            if frames:
                env["SOAK_TRACEMALLOC_FRAMES"] = frames
        idle = f"--JupyterMCP.session_idle_timeout={session_idle}"
        delay = "None" if room_cleanup_delay is None else room_cleanup_delay
        rooms = f"--YDocExtension.document_cleanup_delay={delay}"
        extensions = {"_soak_probe": True}
        if not collaboration:
            extensions["jupyter_server_ydoc"] = False
        with (
            jupyter_server(root, idle, rooms, env=env, extensions=extensions) as server,
            httpx2.Client(headers={"Authorization": f"token {server.token}"}, timeout=120) as http,
        ):
            probe = f"{server.url}/soak-probe"
            quiet(http, server, 60)  # the warm start
            take("start-up", http, server)
            workload = Agents(server, report)
            workload.kinds = kinds
            asyncio.run(workload.run(agents, once))
            # The warm-up's rooms close once their delay has passed: not part of the baseline.
            time.sleep(room_cleanup_delay or 0)
            quiet(http, server, 60)
            interned(take("baseline", http, server), http, server)
            http.get(f"{server.url}/soak-probe", params={"snapshot": "baseline"})

            async def load(prefix: str) -> None:
                deadline = time.monotonic() + minutes * 60
                running = asyncio.ensure_future(workload.run(agents, until(deadline)))
                for k in itertools.count(1):
                    done, _ = await asyncio.wait({running}, timeout=interval)
                    if done:
                        running.result()
                        return
                    take(f"{prefix}{k * interval / 60:.1f} min", http, server)

            for r in range(1, rounds + 1):
                prefix = f"{r}: " if rounds > 1 else ""
                if native and r == rounds:
                    http.get(probe, params={"native": "start"}).raise_for_status()
                asyncio.run(load(prefix))
                take(f"{prefix}load ended", http, server)
                quiet(http, server, settle, report.of("baseline"))
                found = take("after" if r == rounds else f"after round {r}", http, server)
                # What the allocator holds free is given back first: the resident memory
                # compared across rounds is what something holds (both figures are kept).
                trimmed = http.get(f"{server.url}/soak-probe", params={"trim": 1}).json()
                for part in ("trimmed_rss_mib", "malloc_in_use_mib", *MALLOC_FREE, *PYMALLOC):
                    if part in trimmed:
                        found[part] = trimmed[part]
                interned(found, http, server)
                report.maps.append((f"round {r}", smaps(server.proc.pid)))
                if native and r == rounds:
                    stopped = http.get(probe, params={"native": "stop"})
                    stopped.raise_for_status()
                    report.native = native_kept(Path(stopped.json()["capture"]))
            logged = server.logged_errors("EW")
            report.tracebacks = [entry for entry in logged if "Traceback (most recent" in entry]
            report.warnings = [entry for entry in logged if "Traceback (most recent" not in entry]
            report.growth = http.get(probe, params={"growth": "baseline"}).text
            grew = report.memory_over()
            for kind in ("sdk_sessions", "handlers"):
                if kind in report.not_returned() or kind in grew:
                    report.holders[kind] = http.get(probe, params={"holders": kind}).text
    return report


def print_after_trim(report: Report, keys: tuple[str, ...], title: str) -> None:
    """One line of figures the probe's ``?trim`` gave after each round (MiB), if it gave any."""
    trimmed = [(label, found) for label, found in report.samples if keys[-1] in found]
    if trimmed:
        print(
            f"  {title}: "
            + ", ".join(
                f"{label} " + " / ".join(f"{found.get(k, 0):.1f}" for k in keys)
                for label, found in trimmed
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10, help="of load, each round")
    parser.add_argument("--rounds", type=int, default=1, help="loads, each with its wait")
    parser.add_argument("--interval", type=float, default=60, help="seconds between samples")
    parser.add_argument("--agents", type=int, default=2, help="agents of each kind")
    parser.add_argument("--settle", type=float, default=120, help="seconds to wait for return")
    parser.add_argument("--session-idle", type=float, default=30, help="abandoned sessions end")
    parser.add_argument(
        "--room-cleanup-delay",
        type=float,
        default=ROOM_CLEANUP_DELAY,
        help="seconds before an unused room closes (negative: never, to compare)",
    )
    parser.add_argument(
        "--kinds", default=",".join(KINDS), help=f"agents that work, of {','.join(KINDS)}"
    )
    parser.add_argument(
        "--no-collaboration", action="store_true", help="jupyter-collaboration turned off"
    )
    parser.add_argument(
        "--native",
        action="store_true",
        help="track the last round's native allocations with memray (pip install memray)",
    )
    args = parser.parse_args()
    if args.native:
        try:
            import memray  # noqa: F401
        except ImportError:
            parser.error("--native needs memray in this environment (the bench extra has it)")
    kinds = tuple(args.kinds.split(","))
    if not set(kinds) <= set(KINDS):
        parser.error(f"--kinds: of {', '.join(KINDS)}")
    if not 1 <= args.agents <= 10:
        parser.error("--agents: 1 to 10 of each kind (the project has 10 run configurations)")
    columns = ("rss_mib", "heap_mib", "objects", "fds", "threads", "tool_threads", "lock_threads")
    columns += ("anyio_threads",)
    columns += ("other_threads", "tasks", "children", "kernels", "sdk_sessions", "handlers")
    columns += ("rooms", "file_loaders", "rooms_mib")
    print(f"{'':<15}" + "".join(f"{c:>13}" for c in columns), flush=True)

    def show(label: str, found: dict[str, float]) -> None:
        digits = {c: 1 if c.endswith("mib") else 0 for c in columns}
        cells = (f"{found.get(c, float('nan')):>13.{digits[c]}f}" for c in columns)
        print(f"{label:<15}" + "".join(cells), flush=True)

    report = soak(
        args.minutes,
        args.interval,
        args.agents,
        args.settle,
        args.session_idle,
        show,
        rounds=args.rounds,
        room_cleanup_delay=None if args.room_cleanup_delay < 0 else args.room_cleanup_delay,
        kinds=kinds,
        collaboration=not args.no_collaboration,
        trace_memory=True,
        native=args.native,
    )
    load = os.getloadavg()
    print(
        f"{report.calls} calls by {len(kinds) * args.agents} agents, "
        f"{len(report.errors)} errors "
        f"(load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} cores)"
    )
    for count, error in report.errors_by_kind()[:20]:
        print(f"  {count:>5} x {error}")
    print("allocation sites that grew most since the baseline (tracemalloc):")
    print("".join(f"  {line}\n" for line in report.growth.splitlines()), end="")
    kinds = collections.Counter(
        entry.splitlines()[0][entry.find("]") + 1 :] for entry in report.tracebacks
    )
    print(f"the server logged {len(report.tracebacks)} tracebacks:")
    for first, count in kinds.most_common(5):
        print(f"  {count:>5} x {first[:200]}")
        entry = next(e for e in report.tracebacks if first in e)
        print("".join(f"        {line}\n" for line in entry.splitlines()[-12:]), end="")
    said = collections.Counter(
        re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}|\d+", "N", entry.splitlines()[0][entry.find("]") + 1 :])
        for entry in report.warnings
    )
    print(f"the server logged {len(report.warnings)} errors and warnings without a traceback:")
    for first, count in said.most_common(8):
        print(f"  {count:>5} x {first[:200]}")
    for kind, text in report.holders.items():
        print(f"what holds the {kind} left:")
        print("".join(f"  {line}\n" for line in text.splitlines()[:120]), end="")
    missing = report.not_returned()
    print(
        "after the load, back at the baseline: "
        + ("every count" if not missing else f"not {missing} (baseline, after)")
    )
    baseline, after = report.of("baseline"), report.of("after")
    if "other_threads" in missing:
        names = (baseline.get("thread_names", {}), after.get("thread_names", {}))
        more = {n: (names[0].get(n, 0), c) for n, c in names[1].items() if c > names[0].get(n, 0)}
        print(f"  the threads that are more (baseline, after): {more}")
    print(
        f"memory: heap {baseline.get('heap_mib', 0):.1f} -> {after.get('heap_mib', 0):.1f} MiB "
        f"(bound +{HEAP_MARGIN_MIB:g}), tracked objects {baseline['objects']:.0f} -> "
        f"{after['objects']:.0f} (bound +{OBJECTS_MARGIN:.0%}), RSS {baseline['rss_mib']:.1f} -> "
        f"{after['rss_mib']:.1f} MiB"
        + "".join(
            f", {label} {found['rss_mib']:.1f}"
            for label, found in report.samples
            if label.startswith("after round")
        )
        + (f" (bound +{RSS_MARGIN_MIB:g} across the last round)" if args.rounds > 1 else "")
    )
    print(
        "  after malloc_trim(0): RSS "
        + ", ".join(
            f"{label} {found['trimmed_rss_mib']:.1f}"
            for label, found in report.samples
            if "trimmed_rss_mib" in found
        )
        + " MiB; of it malloc in use "
        + ", ".join(
            f"{found['malloc_in_use_mib']:.1f}"
            for _, found in report.samples
            if "trimmed_rss_mib" in found
        )
        + " MiB"
    )
    print(
        f"  bounded: jupyter_client's replay guards {baseline.get('digests', 0):.0f} -> "
        f"{after.get('digests', 0):.0f} signatures in {after.get('kernel_sessions', 0):.0f} "
        f"sessions, {baseline.get('digests_mib', 0):.1f} -> {after.get('digests_mib', 0):.1f} "
        f"MiB (bound {after.get('digests_bound_mib', 0):.1f} MiB; allowed for in the heap's)"
    )
    print_after_trim(
        report,
        MALLOC_FREE,
        "glibc's free memory after the trim (MiB, all / in chunks under a page, which stay "
        "resident)",
    )
    print_after_trim(
        report,
        PYMALLOC,
        "Python's small-object arenas (pymalloc; MiB in arenas / used by objects / free blocks "
        "/ unused pools)",
    )
    rounds = [found for label, found in report.samples if label.startswith("after round")]
    if rounds:
        print(
            f"  allowed for across the last round: glibc's free chunks under a page "
            f"{glibc_small_free_growth(rounds[-1], after):+.1f} MiB, "
            f"pymalloc's free blocks and unused pools "
            f"{pymalloc_free_growth(rounds[-1], after):+.1f} MiB, tracemalloc's own records "
            f"{tracemalloc_growth(rounds[-1], after):+.1f} MiB "
            f"({rounds[-1].get('tracemalloc_mib', 0):.1f} -> {after.get('tracemalloc_mib', 0):.1f})"
        )
    table = interned_growth(baseline, after)
    where = [f"{label}: {', '.join(at)}" for label, at in report.interned_sites.items() if at]
    print(
        "  a high-water mark: the interpreter's table of interned strings, "
        + (
            f"+{table:.1f} MiB since the baseline ("
            + "; ".join(where)
            + "; allowed for in the heap's and the resident memory's)"
            if table
            else "not rebuilt since the baseline"
        )
    )
    if len(report.maps) >= 2:
        (_, before), (_, last) = report.maps[-2:]
        grew = sorted(
            ((last.get(n, 0) - before.get(n, 0), n) for n in set(before) | set(last)),
            reverse=True,
        )
        print(
            "  resident memory by mapping across the last round (MiB, after malloc_trim): "
            + ", ".join(f"{n} {d:+.1f}" for d, n in grew[:6] if abs(d) >= 0.05)
        )
    if report.native:
        total = sum(mib for mib, _, _ in report.native)
        print(
            f"native allocations made over the last round and not freed after it (memray): "
            f"{total:.2f} MiB"
        )
        for mib, count, where in report.native:
            print(f"  {mib:8.3f} MiB {count:>8} x {where[:200]}")
    over = report.memory_over()
    print("memory back within its bounds: " + ("yes" if not over else f"no: {over} (bound, after)"))


if __name__ == "__main__":
    main()
