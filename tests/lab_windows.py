"""Scripted JupyterLab windows on a real lab socket, for the server-side tests of the link.

A :class:`FakeWindow` speaks the labextension's protocol over ``{base_url}mcp/bridge`` of a
real Jupyter server: it reports state and document changes and answers requests the way the
labextension does (the real labextension in Chromium is exercised by ``tests/lab/test_browser.py``).
A module of its own, uniquely named like ``server_configs``; test modules import the
``bridge`` and ``open_window`` fixtures from here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from tornado.websocket import WebSocketClientConnection

from jupyter_mcp.lab.protocol import REQUESTS, check_params

Handler = Callable[[dict[str, Any]], Any]


class Handlers(dict[str, Handler]):
    """A window's answers by request method; only methods of protocol.json can be scripted."""

    def __setitem__(self, method: str, handler: Handler) -> None:
        assert method in REQUESTS, f"protocol.json has no request {method!r}"
        super().__setitem__(method, handler)


class FakeWindow:
    """A scripted JupyterLab window: answers requests with ``handlers[method](params)``.

    Like the labextension, it knows the requests of protocol.json only: a request whose method
    or parameters are not declared there is answered with an error and kept in ``violations``
    (the ``open_window`` fixture fails the test on any).
    """

    def __init__(self, ws: WebSocketClientConnection) -> None:
        self.ws = ws
        self.handlers = Handlers()
        self.requests: list[dict[str, Any]] = []
        self.messages: list[dict[str, Any]] = []
        self.violations: list[str] = []
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            raw = await self.ws.read_message()
            if raw is None:
                return
            message = json.loads(raw)
            if message.get("type") != "request":
                self.messages.append(message)
                continue
            self.requests.append(message)
            try:
                check_params(message["method"], message["params"])
            except ValueError as e:
                self.violations.append(str(e))
                self._answer(message["id"], {"error": f"protocol violation: {e}"})
                continue
            handler = self.handlers.get(message["method"])
            if handler is None:
                continue  # never answers: lets the server's timeout fire
            try:
                answer = {"result": handler(message["params"])}
            except Exception as e:  # the labextension reports failures as "error"
                answer = {"error": str(e)}
            self._answer(message["id"], answer)

    def _answer(self, request_id: int, answer: dict[str, Any]) -> None:
        self.ws.write_message(json.dumps({"type": "response", "id": request_id, **answer}))

    def state(self, **fields: Any) -> None:
        self.ws.write_message(json.dumps({"type": "state", **fields}))

    def changed(self, path: str, kind: str = "notebook", **fields: Any) -> None:
        """Report a change of a document, as the labextension's changes.ts does."""
        message = {"type": "changed", "path": path, "kind": kind, "sources": True, "origins": []}
        message.update({"user": not fields.get("origins"), **fields})
        self.ws.write_message(json.dumps(message))

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m.get("type") == kind]

    def activity(self) -> list[dict[str, Any]]:
        """The activity entries the window was shown, in order (the server sends them gathered,
        several to an ``activities`` message)."""
        return [r for m in self.of_type("activities") for r in m["records"]]

    async def close(self) -> None:
        self.ws.close()
        await asyncio.wait_for(self._task, 5)


@pytest.fixture
def bridge(mcp_app: Any) -> Any:
    return mcp_app.tool_context.services.editor


@pytest.fixture
def open_window(jp_ws_fetch: Any, bridge: Any) -> Callable[..., Any]:
    """``await open_window(id)`` → a connected FakeWindow (closed at the end of the test)."""
    windows: list[FakeWindow] = []

    async def _open(window_id: str = "w1", **params: Any) -> FakeWindow:
        ws = await jp_ws_fetch("mcp", "bridge", params={"window": window_id, **params})
        window = FakeWindow(ws)
        windows.append(window)
        await until(lambda: any(w.id == window_id for w in bridge.windows()))
        return window

    yield _open
    for window in windows:
        window.ws.close()
    assert not [v for window in windows for v in window.violations]


async def until(condition: Callable[[], Any], timeout: float = 5.0) -> None:
    """Wait for ``condition()`` to hold (messages cross a real socket)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)
