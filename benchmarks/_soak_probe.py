"""A Jupyter server extension for ``soak.py``: what only the server process can tell about itself.

``GET {base_url}soak-probe`` (authenticated) answers the event loop's live asyncio tasks, the
threads of the process by kind (jupyter_mcp's tool-call pool, the event loop's default executor,
the rest) and the size of each pool's bound. ``GET {base_url}soak-probe?stacks=1`` answers,
as text, where each of them is: every asyncio task's stack and every thread's (what a benchmark
dumps when a call of its goes unanswered). Enabled only by the soak, with this folder on the
server's ``PYTHONPATH``:

    --ServerApp.jpserver_extensions={'jupyter_mcp': True, '_soak_probe': True}
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
import threading
import traceback
from typing import Any

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web


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
        apps = self.serverapp.extension_manager.extension_apps.get("jupyter_mcp", ())
        tool_pool = _pool(next((getattr(a, "tool_executor", None) for a in apps), None))
        default_pool = _pool(getattr(loop, "_default_executor", None))
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
                    "other_threads": threads - tool_pool[0] - default_pool[0],
                }
            )
        )


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
    pattern = url_path_join(serverapp.web_app.settings["base_url"], "soak-probe")
    serverapp.web_app.add_handlers(".*$", [(pattern, ProbeHandler)])


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "_soak_probe"}]
