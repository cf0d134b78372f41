"""A Jupyter server extension for ``soak.py``: what only the server process can tell about itself.

``GET {base_url}soak-probe`` (authenticated) answers the event loop's live asyncio tasks, the
threads of the process by kind (jupyter_mcp's tool-call pool, the event loop's default executor,
the rest) and the size of each pool's bound. Enabled only by the soak, with this folder on the
server's ``PYTHONPATH``:

    --ServerApp.jpserver_extensions={'jupyter_mcp': True, '_soak_probe': True}
"""

from __future__ import annotations

import asyncio
import json
import threading
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


def _load_jupyter_server_extension(serverapp: Any) -> None:
    pattern = url_path_join(serverapp.web_app.settings["base_url"], "soak-probe")
    serverapp.web_app.add_handlers(".*$", [(pattern, ProbeHandler)])


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "_soak_probe"}]
