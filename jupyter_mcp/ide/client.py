"""One MCP session with the server, for the notebook: the official SDK client over HTTP.

Standard MCP rather than seed REST, because the client declares the MCP Apps extension there:
results then carry the data their views show (a DataFrame's HTML, pictures, the texts before
and after an edit), which the notebook draws with the views' own renderers; seed REST gives
only the text value. The session (handshake era: a session keeps the later windows of a long
answer, so reading on never runs the tool again) lives in a thread of its own with its own
event loop, since the kernel's loop is busy running the cell that waits for the answer.

The SDK is imported when the first session opens, never at kernel start.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.toolsets import TOOLSETS
from ..core.version import __version__
from ..views.catalog import APP_MIME_TYPE, EXTENSION_ID
from .server import HOW_TO_CONNECT, NoServerError, ServerAddress


class ToolError(Exception):
    """A tool failed; the message is the tool's own (what to fix)."""


#: The text block a windowed answer ends with (see jupyter_mcp.surfaces.mcp).
_MORE = re.compile(
    r"^\[Result window: characters \d+-(\d+) of (\d+)\. Call again with resultStart="
)


@dataclass
class ToolInfo:
    """A tool as the server lists it."""

    name: str
    title: str
    description: str
    schema: dict[str, Any]
    read_only: bool
    destructive: bool
    toolset: str = ""
    view: str | None = None


@dataclass
class Answer:
    """A tool's whole answer: its value, its result's wire form (pictures, view data)."""

    tool: str
    value: Any
    result: dict[str, Any] = field(repr=False)


def _text_of(result: Any) -> str:
    first = result.content[0] if result.content else None
    return getattr(first, "text", "") or ""


def value_of(structured: Any, text: str, whole: bool) -> Any:
    """The tool's value from its result: JSON data, or the text a tool answered.

    A whole answer that is a JSON object comes as structured content too, so a whole text
    that reads as an object was a text (a JSON file's content, say); lists come as text only
    in the handshake era, and are read back from it.
    """
    if whole and structured is not None:
        return structured
    try:
        parsed = json.loads(text)
    except ValueError:
        return text
    if isinstance(parsed, list) or (isinstance(parsed, dict) and not whole):
        return parsed
    return text


class Connection:
    """The session with one server, held open by a thread of its own until :meth:`close`."""

    def __init__(self, address: ServerAddress, *, timeout: float = 30) -> None:
        self.address = address
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="jupyter-mcp session", daemon=True
        )
        self._thread.start()
        self._client: Any = None
        self._closing: asyncio.Event | None = None
        self._session: concurrent.futures.Future[None] | None = None
        self._toolsets: dict[str, str] | None = None
        try:
            self._open(timeout)
        except BaseException:
            self._stop_loop()
            raise
        atexit.register(self.close)

    # -- the session -----------------------------------------------------------------------

    def _open(self, timeout: float) -> None:
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._session = asyncio.run_coroutine_threadsafe(self._hold(ready), self._loop)
        try:
            ready.result(timeout)
        except concurrent.futures.TimeoutError:
            raise NoServerError(
                f"The Jupyter server at {self.address.describe()} did not answer within "
                f"{timeout:.0f} s. " + HOW_TO_CONNECT
            ) from None
        except Exception as e:
            raise NoServerError(
                f"Cannot talk to the Jupyter server at {self.address.describe()}: "
                f"{_reason(e)}. " + HOW_TO_CONNECT
            ) from None

    async def _hold(self, ready: concurrent.futures.Future[None]) -> None:
        """Open the session, then hold it (entered and left in this one task, as AnyIO wants)."""
        try:
            import httpx2
            from mcp import Client
            from mcp.client import advertise
            from mcp.client.streamable_http import streamable_http_client
            from mcp_types import Implementation

            self._closing = asyncio.Event()
            headers = {"Authorization": f"token {self.address.token}"} if self.address.token else {}
            async with httpx2.AsyncClient(
                headers=headers, timeout=httpx2.Timeout(30, read=None)
            ) as http:
                async with Client(
                    streamable_http_client(self.address.mcp_url, http_client=http),
                    mode="legacy",
                    extensions=[advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})],
                    client_info=Implementation(name="jupyter-mcp-ipython", version=__version__),
                ) as client:
                    self._client = client
                    ready.set_result(None)
                    await self._closing.wait()
        except BaseException as e:
            if not ready.done():
                ready.set_exception(e)
            elif not isinstance(e, asyncio.CancelledError | GeneratorExit):
                raise
        finally:
            self._client = None

    def _run(self, coroutine: Any, timeout: float | None = None) -> Any:
        """Run ``coroutine`` in the session's loop and wait for it; Ctrl-C (a kernel
        interrupt) cancels it there, which cancels the call on the server too."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout)
        except KeyboardInterrupt:
            future.cancel()
            try:
                future.result(10)
            except BaseException:
                pass
            raise

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    @property
    def open(self) -> bool:
        """Whether the session is open."""
        return self._client is not None

    def close(self) -> None:
        """End the session (idempotent)."""
        if self._closing is not None and self._session is not None and not self._session.done():
            self._loop.call_soon_threadsafe(self._closing.set)
            try:
                self._session.result(10)
            except BaseException:
                pass
        if self._thread.is_alive():
            self._stop_loop()

    # -- tools -----------------------------------------------------------------------------

    def tools(self) -> list[ToolInfo]:
        """Every tool the server offers, with its tool set and view."""
        listed = self._run(self._list(self._client))
        if self._toolsets is None:
            self._toolsets = self._run(self._toolset_of())
        for tool in listed:
            tool.toolset = self._toolsets.get(tool.name, "plugins")
        return listed

    @staticmethod
    async def _list(client: Any) -> list[ToolInfo]:
        tools: list[ToolInfo] = []
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            for tool in page.tools:
                hints = tool.annotations
                ui = (tool.meta or {}).get("ui") or {}
                uri = ui.get("resourceUri") if isinstance(ui, dict) else None
                tools.append(
                    ToolInfo(
                        name=tool.name,
                        title=tool.title or tool.name,
                        description=tool.description or "",
                        schema=dict(tool.input_schema or {}),
                        read_only=bool(hints and hints.read_only_hint),
                        destructive=bool(hints is None or hints.destructive_hint is not False),
                        view=uri.rsplit("/", 1)[-1] if isinstance(uri, str) else None,
                    )
                )
            cursor = page.next_cursor
            if cursor is None:
                return tools

    async def _toolset_of(self) -> dict[str, str]:
        """Which tool set each tool is in: the server lists each set on a URL of its own
        (``?toolsets=``), which is the one place it says."""
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        headers = {"Authorization": f"token {self.address.token}"} if self.address.token else {}

        async def names(toolset: str) -> tuple[str, list[str]]:
            async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
                url = f"{self.address.mcp_url}?toolsets={toolset}"
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    return toolset, [t.name for t in await self._list(client)]

        found = await asyncio.gather(*(names(t) for t in TOOLSETS[:-1]))
        return {name: toolset for toolset, listed in found for name in listed}

    def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        progress: Callable[[float, float | None, str | None], None] | None = None,
    ) -> Answer:
        """Call ``tool`` and read its whole answer; a :class:`ToolError` with the tool's
        message when it fails."""
        if self._client is None:
            raise ToolError(
                f"The session with {self.address.describe()} is closed. " + HOW_TO_CONNECT
            )
        answer: Answer = self._run(self._call(tool, arguments, progress))
        return answer

    async def _call(
        self,
        tool: str,
        arguments: dict[str, Any],
        progress: Callable[[float, float | None, str | None], None] | None,
    ) -> Answer:
        from mcp import MCPError

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            if progress is not None:
                progress(done, total, message)

        client = self._client
        try:
            first = await client.call_tool(tool, arguments, progress_callback=on_progress)
        except MCPError as e:
            raise ToolError(str(e)) from None
        except Exception as e:
            raise ToolError(
                f"{tool} did not answer: {_reason(e)} (the server at "
                f"{self.address.describe()} may have stopped)"
            ) from None
        wire = first.model_dump(by_alias=True, mode="json", exclude_none=True)
        text = _text_of(first)
        if first.is_error:
            raise ToolError(text)
        whole = True
        rest = first.content[1:]
        trailer = getattr(rest[0], "text", None) if rest else None
        match = _MORE.match(trailer or "")
        if match:
            whole = False
            parts = [text]
            end, total = int(match[1]), int(match[2])
            while end < total:
                window = await client.call_tool(tool, {**arguments, "resultStart": end})
                if window.is_error:
                    raise ToolError(_text_of(window))
                chunk = _text_of(window)
                if not chunk:
                    break
                parts.append(chunk)
                end += len(chunk)
            text = "".join(parts)
        # The wire form keeps what the notebook shows beside the value: pictures, view data.
        wire["content"] = [
            block for block in wire.get("content", []) if block.get("type") != "text"
        ]
        wire.pop("structuredContent", None)
        return Answer(tool=tool, value=value_of(first.structured_content, text, whole), result=wire)


def _reason(error: BaseException) -> str:
    """An exception as one line a user reads (the SDK's and httpx's, unwrapped)."""
    while True:
        group: Any = getattr(error, "exceptions", None)  # an exception group (a task group's)
        if not group:
            break
        error = group[0]
    text = str(error) or type(error).__name__
    return text.splitlines()[0]
