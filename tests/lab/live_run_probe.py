"""A test-only server extension: reports a running cell to a notebook's document.

The browser tests' JupyterLab loads it, so a test can show ``[*]``, outputs and the execution
count in the open notebook exactly as the execution tools do (through the notebook's document,
here the window's live model), without depending on a kernel's timing.
``POST {base_url}live-run-probe`` with ``{"path", "cellId", "step": "started" | "output" |
"finished", "output"?, "executionCount"?}`` answers ``{"location"}``.
"""

from __future__ import annotations

import json
from typing import Any

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from jupyter_mcp.lab.notebooks import open_notebook

# One document per notebook path, as one execution keeps its document for the whole run.
_documents: dict[str, Any] = {}


class LiveRunProbe(APIHandler):
    @web.authenticated
    async def post(self) -> None:
        body = json.loads(self.request.body)
        apps = self.serverapp.extension_manager.extension_apps["jupyter_mcp"]
        ctx = next(iter(apps)).tool_context
        path = body["path"]
        if body["step"] == "started" or path not in _documents:
            _documents[path] = await open_notebook(ctx, path)
        doc = _documents[path]
        if body["step"] == "started":
            await doc.run_started(body["cellId"])
        elif body["step"] == "output":
            await doc.output(body["cellId"], body["output"])
        else:
            await doc.run_finished(body["cellId"], body.get("executionCount"))
        self.finish(json.dumps({"location": doc.location}))


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "live_run_probe"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    base = serverapp.web_app.settings["base_url"]
    serverapp.web_app.add_handlers(".*$", [(url_path_join(base, "live-run-probe"), LiveRunProbe)])
