"""A Jupyter server extension for ``soak.py``: what only the server process can tell about itself.

``GET {base_url}soak-probe`` (authenticated) answers the event loop's live asyncio tasks, the
threads of the process by kind (jupyter_mcp's tool-call pool, the event loop's default executor,
the rest) and the size of each pool's bound; after a full garbage collection, the objects the
collector tracks, the MCP SDK's live session objects and the live request handlers (counts:
what a leak of sessions or calls leaves); with ``SOAK_TRACEMALLOC=1`` in the server's
environment, the Python heap that ``tracemalloc`` traces (MiB; tracing starts as the probe
loads). ``GET {base_url}soak-probe?stacks=1`` answers, as text, where each of them is: every
asyncio task's stack and every thread's (what a benchmark dumps when a call of its goes
unanswered); ``?holders=KIND`` what holds each live SDK session or handler. With
``SOAK_LOOP_LAG=1`` in the server's environment, ``?lag=1`` answers, as text, what held the
event loop whenever it was late (``_loop_lag``), and ``?lag=reset`` starts that count afresh.
``?trim=1`` answers the resident memory before and after glibc's ``malloc_trim(0)`` (what the
allocator holds free but has not given back, which is no leak), and what malloc still has
handed out; ``?interned=1`` the interpreter's table of interned strings, where tracemalloc
sees it (a high-water mark). The counts also tell the
bounded caches that fill up to their bound and stay there: jupyter_client's replay guard (each
kernel ``Session``'s ``digest_history``, up to ``digest_history_size`` signatures), its size and
bound in MiB. ``?snapshot=LABEL`` keeps a tracemalloc snapshot (in a file, so that it weighs
nothing on the heap it measures); ``?growth=LABEL`` answers, as text, the allocation sites that
grew most since that snapshot. ``?trim=1`` also answers CPython's own small-object allocator
(pymalloc: its arenas, what of them objects use, and the free blocks and pools it keeps, which
only an arena that empties entirely gives back). ``?native=start`` starts memray's tracker of
native allocations (malloc and mmap by any code, C libraries' too, with their native stacks;
Python's allocators are left out, tracemalloc sees those) into a capture file, and
``?native=stop`` stops it and answers that file's path: its allocations not freed by then are
what native code made and still holds. Enabled only by the soak, with this folder on the
server's ``PYTHONPATH``:

    --ServerApp.jpserver_extensions={'jupyter_mcp': True, '_soak_probe': True}
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import functools
import gc
import io
import itertools
import json
import os
import re
import sys
import tempfile
import threading
import traceback
import tracemalloc
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
from _loop_lag import LagMonitor
from jupyter_client.session import Session
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from mcp.server.session import ServerSession
from tornado import web
from tornado.ioloop import IOLoop

from jupyter_mcp.core import context as core_context
from jupyter_mcp.lab.live_notebooks import collaboration

#: The event loop's watchdog (``SOAK_LOOP_LAG=1``), or None.
_LAG: LagMonitor | None = None
#: Where ``?snapshot=`` keeps its snapshots (one file per label).
_SNAPSHOTS = Path(tempfile.mkdtemp(prefix="soak-probe-"))
#: Growth lines ``?growth=`` answers.
GROWTH_LINES = 15
#: memray's tracker while ``?native=start`` runs it (and its capture file), or None.
_NATIVE: tuple[Any, Path] | None = None
#: Captures made so far (each ``?native=start`` writes a new file).
_NATIVE_CAPTURES = itertools.count(1)


def in_a_copy(count: Callable[[], dict[str, float]]) -> dict[str, float]:
    """``count()``, run in a forked copy of the server (where there is ``fork``).

    Counting objects means holding a reference to each (``gc.get_objects()``), and some are
    still being built by other threads: a tuple that ``tuple(generator)`` fills in a worker
    thread (subprocess's list of executables, in every git call) then has two references,
    and when that thread resumes, CPython refuses to grow it ("SystemError:
    Objects/tupleobject.c:927: bad argument to internal function"). The 10 min x 3 soak had
    two such errors in 29,018 calls, both in ``commit_changes``, and they were this probe's:
    nothing else in the server lists objects. The copy has only this thread, so nothing it
    holds is being built; its collector is off, so that no finalizer runs in it, and it
    leaves with ``os._exit``, running nothing of the server's.
    """
    if not hasattr(os, "fork"):
        return count()
    read, write = os.pipe()
    with warnings.catch_warnings():  # 3.12's warning of forking with threads: see above
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        try:
            gc.disable()
            try:
                answer = json.dumps(count())
            except BaseException:
                answer = json.dumps({"failed": traceback.format_exc()})
            with os.fdopen(write, "w") as pipe:
                pipe.write(answer)
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    found = json.loads(answer) if answer else {"failed": "the copy ended without an answer"}
    if "failed" in found:
        raise RuntimeError(f"counting in a copy of the server failed:\n{found['failed']}")
    return found


def _counts() -> dict[str, float]:
    """The objects the collector tracks, and the SDK's session objects and the request
    handlers among them (in :func:`in_a_copy`)."""
    objects = gc.get_objects()
    return {
        # jupyter_mcp sets its start-up objects aside (gc.freeze): they count too.
        "objects": len(objects) + gc.get_freeze_count(),
        **{kind: sum(isinstance(o, cls) for o in objects) for kind, cls in KINDS.items()},
        **digests(objects),
    }


def _memory() -> dict[str, float]:
    """After a full collection (what is left is what is held): :func:`_counts`, and the
    traced heap."""
    gc.collect()
    found = in_a_copy(_counts)
    if tracemalloc.is_tracing():
        found["heap_mib"] = tracemalloc.get_traced_memory()[0] / 2**20
        # What tracemalloc itself holds, in malloc's memory: its traces, and every distinct
        # traceback it has seen, which it keeps until tracing stops. The instrument's own
        # growth, in the resident memory and malloc's figures, not the server's.
        found["tracemalloc_mib"] = tracemalloc.get_tracemalloc_memory() / 2**20
    return found


#: The objects counted by kind, whose holders ``?holders=KIND`` answers.
KINDS: dict[str, type] = {"sdk_sessions": ServerSession, "handlers": web.RequestHandler}


def _describe(obj: Any) -> str:
    name = f"{type(obj).__module__}.{type(obj).__qualname__}"
    if isinstance(obj, dict):
        return f"{name} keys {', '.join(map(str, list(obj)[:6]))}"[:200]
    return f"{name} {obj!r}"[:200]


def holders(kind: str, depth: int = 6, lines: int = 30, shown: int = 3) -> str:
    """What holds the first ``shown`` live objects of ``kind`` (see :data:`KINDS`): their
    referrers, theirs and so on, ``depth`` levels up, at most ``lines`` per object, as text
    (the set-aside start-up objects are not searched). Each look scans the whole heap: a few
    objects tell the holder of hundreds."""
    gc.collect()
    found = [o for o in gc.get_objects() if isinstance(o, KINDS[kind])]
    out = io.StringIO()
    out.write(f"{len(found)} {kind}, the first {min(shown, len(found))} of them:\n")
    ignored = {id(found)}
    for obj in found[:shown]:
        out.write(f"\n--- {_describe(obj)}\n")
        seen: set[int] = set()
        todo = [(obj, 1)]
        while todo and len(seen) < lines:
            target, level = todo.pop()
            referrers = gc.get_referrers(target)
            ignored.add(id(referrers))
            for r in referrers:
                if id(r) in seen or id(r) in ignored or isinstance(r, types.FrameType):
                    continue
                seen.add(id(r))
                out.write("  " * level + _describe(r) + "\n")
                if level < depth:
                    todo.append((r, level + 1))
            del referrers
    return out.getvalue()


def _rss_mib() -> float:
    status = Path("/proc/self/status").read_text()
    return (
        next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
        / 1024
    )


class _MallInfo2(ctypes.Structure):
    # glibc's struct mallinfo2 (2.33 and later), every field a size_t.
    _fields_ = [
        (field, ctypes.c_size_t)
        for field in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def trim() -> dict[str, float]:
    """The resident memory before and after glibc's ``malloc_trim(0)``, which gives the free
    memory of every arena back to the system: what it drops was the allocator's free lists and
    fragmentation, not memory anything holds (0 drop where there is no glibc). With it, what
    malloc has handed out and not had back (``mallinfo2``: what native code and CPython's large
    objects hold)."""
    before = _rss_mib()
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    in_use = 0.0
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)
    free = {}
    if libc is not None and hasattr(libc, "mallinfo2"):
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
        in_use = (info.uordblks + info.hblkhd) / 2**20
        free["malloc_free_mib"] = (info.fordblks + info.fsmblks) / 2**20
    if libc is not None and hasattr(libc, "malloc_info"):
        free["malloc_free_small_mib"] = _free_below_a_page(libc)
    return {
        "rss_mib": before,
        "trimmed_rss_mib": _rss_mib(),
        "malloc_in_use_mib": in_use,
        **free,
        **in_a_copy(_pymalloc),
    }


#: A free-chunk line of glibc's ``malloc_info`` XML.
_FREE_CHUNKS = re.compile(r'<(?:size|unsorted) from="(\d+)" to="(\d+)" total="(\d+)"')


def _free_below_a_page(libc: Any) -> float:
    """What glibc's arenas hold free in chunks smaller than a page (MiB, from ``malloc_info``):
    memory ``malloc_trim`` cannot give back, since it returns whole free pages only, so it
    stays resident between the chunks in use around it. The allocator's fragmentation, a
    lower bound of it (a larger free chunk keeps its partial pages at both ends too)."""
    page = os.sysconf("SC_PAGE_SIZE")
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    with tempfile.NamedTemporaryFile(suffix=".xml") as out:
        stream = libc.fopen(out.name.encode(), b"w")
        if not stream:
            return 0.0
        try:
            libc.malloc_info(0, stream)
        finally:
            libc.fclose(stream)
        text = Path(out.name).read_text()
    # The last <sizes> block is the sum over every arena: count each arena's own only.
    arenas = re.findall(r"<heap nr=.*?</sizes>", text, re.S)
    return (
        sum(
            int(total)
            for arena in arenas
            for _, upto, total in _FREE_CHUNKS.findall(arena)
            if int(upto) < page
        )
        / 2**20
    )


#: What ``sys._debugmallocstats()`` prints of pymalloc's arenas (CPython 3.10 to 3.13), read
#: as bytes: the arenas it holds, the bytes in blocks objects use, the free blocks in pools
#: that are in use, and the pools no object uses (kept inside arenas that are not empty).
_PYMALLOC_LINES = {
    "pymalloc_arenas_mib": re.compile(r"^\d+ arenas \* \d+ bytes/arena\s+=\s+([\d,]+)", re.M),
    "pymalloc_used_mib": re.compile(r"^# bytes in allocated blocks\s+=\s+([\d,]+)", re.M),
    "pymalloc_free_mib": re.compile(r"^# bytes in available blocks\s+=\s+([\d,]+)", re.M),
    "pymalloc_unused_pools_mib": re.compile(r"^\d+ unused pools \* \d+ bytes\s+=\s+([\d,]+)", re.M),
}


def _pymalloc() -> dict[str, float]:
    """CPython's small-object allocator, as ``sys._debugmallocstats()`` tells it (MiB; empty
    where it prints none of these lines). Objects of at most 512 bytes live in its 1 MiB (256
    KiB before 3.10) arenas, mmap'd outside malloc: memory an arena holds is resident until
    every object in it is freed, so free blocks and unused pools in arenas still in use are
    fragmentation, which neither tracemalloc (what objects use) nor mallinfo counts. It prints
    to the C-level standard error, which is redirected to a file for the call: run it in a
    copy of the server (:func:`in_a_copy`), whose stderr nothing else writes to. It prints
    nothing while tracemalloc's hooks wrap the allocator, so the copy stops tracing first
    (tracemalloc keeps its traces in malloc's memory, not pymalloc's: the arenas stay as
    they were)."""
    tracemalloc.stop()
    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        try:
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode(errors="replace")
    found = {}
    for key, pattern in _PYMALLOC_LINES.items():
        match = pattern.search(text)
        if match:
            found[key] = int(match.group(1).replace(",", "")) / 2**20
    return found


def track_native(action: str) -> dict[str, Any]:
    """Start (``start``) or stop (``stop``) memray's native tracker; ``stop`` answers the
    capture's path. ValueError for an action that does not fit the tracker's state."""
    global _NATIVE
    if action == "start":
        if _NATIVE is not None:
            raise ValueError("the native tracker is already running")
        import memray  # only the soak's --native needs it

        capture = _SNAPSHOTS / f"native-{next(_NATIVE_CAPTURES)}.bin"
        # Python's allocators are left to tracemalloc: with them, memray would record every
        # object, and its records would outweigh what they record.
        tracker = memray.Tracker(capture, native_traces=True, trace_python_allocators=False)
        tracker.__enter__()
        _NATIVE = (tracker, capture)
        return {"started": str(capture)}
    if action == "stop":
        if _NATIVE is None:
            raise ValueError("the native tracker is not running (?native=start starts it)")
        tracker, capture = _NATIVE
        _NATIVE = None
        tracker.__exit__(None, None, None)
        return {"capture": str(capture)}
    raise ValueError(f"native={action!r}: start or stop")


@functools.cache
def _set_bytes(entries: int) -> int:
    """What a set of ``entries`` items weighs itself (its table, without the items)."""
    return sys.getsizeof(set(range(entries)))


def digests(objects: list[Any]) -> dict[str, float]:
    """jupyter_client's replay guard: every live ``Session`` remembers the signatures of the
    messages it received, up to ``digest_history_size`` of them (2**16 by default), then drops
    a random tenth. A cache that fills up to its bound and stays, not a leak: its size now and
    its bound (MiB), the signatures (bytes of the same length) and the set's table counted."""
    sessions = [o for o in objects if isinstance(o, Session)]
    size = bound = 0.0
    kept = 0
    for session in sessions:
        history = session.digest_history
        one = max((sys.getsizeof(d) for d in itertools.islice(history, 1)), default=0)
        one = one or sys.getsizeof(b"0" * 64)  # a sha256 hexdigest, the default scheme
        size += sys.getsizeof(history) + one * len(history)
        bound += _set_bytes(session.digest_history_size + 1) + one * session.digest_history_size
        kept += len(history)
    return {
        "kernel_sessions": len(sessions),
        "digests": kept,
        "digests_mib": size / 2**20,
        "digests_bound_mib": bound / 2**20,
    }


def _snapshot() -> tracemalloc.Snapshot:
    """The traced heap, without what tracemalloc and this probe hold themselves."""
    return tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, __file__)]
    )


def _interned_table_sizes() -> set[int]:
    """The sizes CPython 3.11 and 3.12 give the table of interned strings as it grows: a dict
    whose keys are all str, of 2**n slots (n from 16), allocated in one block: a 32-byte
    header, the slot index (4 bytes a slot) and two thirds of the slots as 16-byte entries.
    None for other versions, whose layout differs."""
    if sys.version_info[:2] not in ((3, 11), (3, 12)):
        return set()
    return {32 + 4 * 2**n + 16 * (2 ** (n + 1) // 3) for n in range(16, 26)}


def interned_table() -> dict[str, Any]:
    """The traced blocks the size of the interpreter's table of interned strings (MiB), with
    where each was allocated. The table holds every interned string (pathlib interns each
    part of every path, attribute names are interned...) and grows in steps: when it fills,
    it is rebuilt at twice its size as soon as the strings interned at that moment need it,
    and it never shrinks. It is a high-water mark of the strings interned at once, not a leak
    (the strings themselves are counted where they are made). Tracing only sees the table
    once it is rebuilt after tracing started, so at most one block is found."""
    if not tracemalloc.is_tracing():
        return {"interned_table_mib": 0.0, "interned_table_sites": []}
    sizes = _interned_table_sizes()
    found = [trace for trace in _snapshot().traces if trace.size in sizes]
    return {
        "interned_table_mib": sum(trace.size for trace in found) / 2**20,
        "interned_table_sites": [
            f"{trace.size / 1024:.1f} KiB at {trace.traceback[0].filename}:"
            f"{trace.traceback[0].lineno}"
            for trace in found
        ],
    }


def growth(label: str, lines: int = GROWTH_LINES) -> str:
    """The allocation sites that grew most since the snapshot ``label``, as text."""
    if not tracemalloc.is_tracing():
        return "tracemalloc is not tracing (SOAK_TRACEMALLOC=1 starts it)\n"
    then = tracemalloc.Snapshot.load(str(_SNAPSHOTS / label))
    stats = _snapshot().compare_to(then, "lineno")
    out = io.StringIO()
    for stat in stats[:lines]:
        frame = stat.traceback[0]
        out.write(
            f"{stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8d} blocks  "
            f"{frame.filename}:{frame.lineno}\n"
        )
    if tracemalloc.get_traceback_limit() > 1:
        for stat in _snapshot().compare_to(then, "traceback")[:3]:
            out.write(f"\n{stat.size_diff / 1024:+.1f} KiB {stat.count_diff:+d} blocks from:\n")
            out.write("".join(f"  {line}\n" for line in stat.traceback.format()))
    return out.getvalue()


def _thread_names() -> dict[str, int]:
    """The process's threads, counted by name with the numbers masked."""
    names: dict[str, int] = {}
    for thread in threading.enumerate():
        name = re.sub(r"\d+", "#", thread.name)
        names[name] = names.get(name, 0) + 1
    return names


def _pool(executor: Any) -> tuple[int, int]:
    """Threads a ThreadPoolExecutor holds now, and its bound (0, 0 for none)."""
    if executor is None:
        return 0, 0
    return len(getattr(executor, "_threads", ())), int(getattr(executor, "_max_workers", 0))


class ProbeHandler(JupyterHandler):
    """The counts, as JSON."""

    @web.authenticated
    def get(self) -> None:
        loop = asyncio.get_running_loop()
        if self.get_query_argument("stacks", None):
            self.set_header("Content-Type", "text/plain; charset=utf-8")
            self.finish(stacks(loop))
            return
        lag = self.get_query_argument("lag", None)
        if lag is not None:
            self.set_header("Content-Type", "text/plain; charset=utf-8")
            if _LAG is None:
                self.finish("the loop is not watched (SOAK_LOOP_LAG=1 starts the watchdog)\n")
            elif lag == "reset":
                _LAG.reset()
                self.finish("reset\n")
            else:
                self.finish(_LAG.report())
            return
        label = self.get_query_argument("snapshot", None)
        if label is not None:
            if tracemalloc.is_tracing():
                _snapshot().dump(str(_SNAPSHOTS / Path(label).name))
            self.finish({"kept": tracemalloc.is_tracing()})
            return
        if self.get_query_argument("trim", None):
            self.finish(trim())
            return
        action = self.get_query_argument("native", None)
        if action is not None:
            try:
                self.finish(track_native(action))
            except ValueError as e:
                raise web.HTTPError(400, str(e)) from None
            return
        if self.get_query_argument("interned", None):
            self.finish(interned_table())
            return
        kind = self.get_query_argument("holders", None)
        if kind is not None:
            self.set_header("Content-Type", "text/plain; charset=utf-8")
            self.finish(holders(kind))
            return
        label = self.get_query_argument("growth", None)
        if label is not None:
            self.set_header("Content-Type", "text/plain; charset=utf-8")
            self.finish(growth(Path(label).name))
            return
        apps = self.serverapp.extension_manager.extension_apps.get("jupyter_mcp", ())
        tool_pool = _pool(next((getattr(a, "tool_executor", None) for a in apps), None))
        default_pool = _pool(getattr(loop, "_default_executor", None))
        # The waiters for a file's lock that Jupyter's saves take (core.context.held): a pool
        # whose threads stay once made, up to its bound, as the other two.
        lock_pool = _pool(core_context._lock_waiters)
        # AnyIO's workers (the SDK's and jupyter-collaboration's thread hops): a pool too, whose
        # idle threads end only when a later hop finds them idle for 10 s.
        anyio_pool = (
            sum(t.name == "AnyIO worker thread" for t in threading.enumerate()),
            int(anyio.to_thread.current_default_thread_limiter().total_tokens),
        )
        threads = threading.active_count()
        self.set_header("Content-Type", "application/json")
        self.finish(
            json.dumps(
                {
                    "tasks": len(asyncio.all_tasks(loop)),
                    "threads": threads,
                    "tool_threads": tool_pool[0],
                    "tool_threads_bound": tool_pool[1],
                    "executor_threads": default_pool[0],
                    "executor_threads_bound": default_pool[1],
                    "lock_threads": lock_pool[0],
                    "lock_threads_bound": lock_pool[1],
                    "anyio_threads": anyio_pool[0],
                    "anyio_threads_bound": anyio_pool[1],
                    "other_threads": threads
                    - tool_pool[0]
                    - default_pool[0]
                    - lock_pool[0]
                    - anyio_pool[0],
                    # Which threads they are, by name with the numbers masked ("Thread-#").
                    "thread_names": _thread_names(),
                    **_memory(),
                    **rooms(self.serverapp),
                }
            )
        )


def rooms(serverapp: Any) -> dict[str, float]:
    """jupyter-collaboration's open document rooms, the file loaders (each polls its file) and
    the size of the rooms' documents as updates (MiB: their content and history, in pycrdt's
    memory, which tracemalloc does not see); none without collaboration."""
    extension = collaboration(serverapp)
    server = getattr(extension, "ywebsocket_server", None)
    if server is None:
        return {"rooms": 0, "file_loaders": 0, "rooms_mib": 0.0}
    documents = [room for room in server.rooms.values() if hasattr(room, "file_type")]
    loaders = getattr(extension, "file_loaders", None)
    return {
        "rooms": len(documents),
        "file_loaders": len(getattr(loaders, "_FileLoaderMapping__dict", ())),
        "rooms_mib": sum(len(room.ydoc.get_update()) for room in documents) / 2**20,
    }


def awaits(coro: Any) -> list[str]:
    """Where a coroutine is, and what it awaits, down to the innermost await (a task's own
    stack shows only its outermost frame)."""
    found = []
    for _ in range(60):
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        frame = frame or getattr(coro, "ag_frame", None)
        if frame is None:
            if coro is not None:
                found.append(f"awaiting {coro!r}"[:300])
            break
        found.append(f"{frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_qualname}")
        inner = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
        coro = inner or getattr(coro, "ag_await", None)
        if coro is None:
            break
    return found


def stacks(loop: asyncio.AbstractEventLoop) -> str:
    """Every task of ``loop`` with its stack (a coroutine's awaits, innermost last), then every
    thread's stack, as text."""
    out = io.StringIO()
    tasks = sorted(asyncio.all_tasks(loop), key=lambda t: t.get_name())
    out.write(f"{len(tasks)} asyncio tasks\n")
    for task in tasks:
        out.write(f"\n--- {task!r}\n")
        out.write("".join(f"  {where}\n" for where in awaits(task.get_coro())))
    names = {t.ident: t.name for t in threading.enumerate()}
    frames = sys._current_frames()
    out.write(f"\n\n{len(frames)} threads\n")
    for ident, frame in frames.items():
        out.write(f"\n--- thread {names.get(ident, '?')} ({ident})\n")
        out.write("".join(traceback.format_stack(frame, limit=40)))
    return out.getvalue()


def _load_jupyter_server_extension(serverapp: Any) -> None:
    if os.environ.get("SOAK_TRACEMALLOC") == "1" and not tracemalloc.is_tracing():
        # SOAK_TRACEMALLOC_FRAMES=N keeps N frames of each allocation: ?growth= then also
        # answers who called the sites that grew most.
        tracemalloc.start(int(os.environ.get("SOAK_TRACEMALLOC_FRAMES", "1")))
    if os.environ.get("SOAK_LOOP_LAG") == "1":
        global _LAG
        # The loop the server will run (not yet running as extensions load).
        _LAG = LagMonitor(IOLoop.current().asyncio_loop)  # type: ignore[attr-defined]
    pattern = url_path_join(serverapp.web_app.settings["base_url"], "soak-probe")
    serverapp.web_app.add_handlers(".*$", [(pattern, ProbeHandler)])


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "_soak_probe"}]
