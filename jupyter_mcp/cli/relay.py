"""``jupyter-mcp`` (also ``jupyter mcp``): the stdio bridge and client configuration.

``jupyter mcp stdio`` lets clients that only spawn processes (Claude Desktop, any stdio MCP
client) talk to a running Jupyter server: it finds the server that serves the current folder
through Jupyter's runtime files (URL and token from there), or takes ``--url``/``--token``, and
relays MCP messages between its stdin/stdout and the server's ``/mcp`` endpoint. The relay is
transparent: each JSON-RPC line from stdin is POSTed with the headers its protocol era needs
(session id and version for the legacy handshake era; ``MCP-Protocol-Version``, ``Mcp-Method``
and ``Mcp-Name`` from the message itself for 2026-07-28), and every message the server answers
with, as JSON or as an SSE stream, goes to stdout as one line. Logs go to stderr only.

``jupyter mcp config`` prints the lines that add the server to Claude Code, Claude Desktop and
Cursor.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.paths import is_inside

log = logging.getLogger("jupyter_mcp.cli.relay")

PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
NAME_BEARING_METHODS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class BridgeError(Exception):
    """Something the user has to fix before the bridge can run (printed, exit status 1)."""


# -- finding the server -------------------------------------------------------------------


@dataclass
class ServerTarget:
    """Where the bridge sends MCP: the server's ``/mcp`` URL and its token."""

    mcp_url: str
    token: str
    root_dir: str | None = None


def mcp_url_of(server_url: str) -> str:
    """The Streamable HTTP endpoint of a server whose base URL is ``server_url``."""
    base = server_url.split("?", 1)[0]
    if base.rstrip("/").endswith("/mcp"):
        return base.rstrip("/")
    return base.rstrip("/") + "/mcp"


def find_server(folder: Path, servers: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The running server whose ``root_dir`` contains ``folder``; the deepest root wins."""
    folder = folder.resolve()
    best: tuple[int, dict[str, Any]] | None = None
    for info in servers:
        root_text = info.get("root_dir") or info.get("notebook_dir")
        if not root_text or info.get("sock"):
            continue
        root = Path(root_text).expanduser().resolve()
        if is_inside(root, folder):
            depth = len(root.parts)
            if best is None or depth > best[0]:
                best = (depth, info)
    return best[1] if best else None


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    if os.name == "nt":
        return True  # no cheap check there; a dead server fails to answer instead
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running_servers(runtime_dir: str | None = None) -> list[dict[str, Any]]:
    """Every running Jupyter server that wrote a runtime file (``jpserver-*.json``).

    What ``jupyter_server.serverapp.list_running_servers`` reads, without importing the whole
    server (seconds on a busy machine) into a bridge that a client starts on every launch.
    """
    from jupyter_core.paths import jupyter_runtime_dir

    folder = Path(runtime_dir or jupyter_runtime_dir())
    servers = []
    for file in sorted(folder.glob("jpserver-*.json")):
        try:
            info = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # being written, or not ours to read
        if isinstance(info, dict) and _alive(info.get("pid")):
            servers.append(info)
    return servers


def resolve_target(url: str | None, token: str | None, root: str | None) -> ServerTarget:
    """``--url``/``--token`` when given, else the running server that serves ``root``."""
    if url:
        return ServerTarget(
            mcp_url=mcp_url_of(url), token=token or os.environ.get("JUPYTER_TOKEN", "")
        )
    folder = Path(root or os.getcwd())
    servers = running_servers()
    info = find_server(folder, servers)
    if info is None:
        if servers:
            roots = ", ".join(sorted(str(s.get("root_dir")) for s in servers))
            raise BridgeError(
                f"No running Jupyter server serves {folder.resolve()} (running servers serve: "
                f"{roots}). Start one there with 'jupyter lab', pass --root DIR, or give "
                "--url and --token."
            )
        raise BridgeError(
            f"No running Jupyter server found for {folder.resolve()}. Start one with "
            "'jupyter lab' in your project folder, or give --url and --token."
        )
    return ServerTarget(
        mcp_url=mcp_url_of(info["url"]),
        token=token if token is not None else info.get("token", ""),
        root_dir=info.get("root_dir"),
    )


# -- the relay ----------------------------------------------------------------------------


def _modern_version(message: dict[str, Any]) -> str | None:
    params = message.get("params")
    if isinstance(params, dict):
        meta = params.get("_meta")
        if isinstance(meta, dict) and isinstance(meta.get(PROTOCOL_VERSION_META_KEY), str):
            return meta[PROTOCOL_VERSION_META_KEY]
    return None


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def sse_messages(buffer: str) -> tuple[list[str], str]:
    """Split complete SSE events off ``buffer``: their ``data`` payloads and what remains."""
    buffer = buffer.replace("\r\n", "\n")
    payloads = []
    while "\n\n" in buffer:
        event, buffer = buffer.split("\n\n", 1)
        data = "\n".join(
            line[5:].lstrip(" ") for line in event.split("\n") if line.startswith("data:")
        )
        if data:
            payloads.append(data)
    return payloads, buffer


class Relay:
    """Relays JSON-RPC lines between stdio and the server's Streamable HTTP endpoint."""

    def __init__(
        self,
        target: ServerTarget,
        write: Callable[[bytes], None],
        *,
        http_client: Any = None,
    ) -> None:
        import httpx2

        self.target = target
        self._write = write
        self._write_lock = threading.Lock()
        headers = {"Authorization": f"token {target.token}"} if target.token else {}
        self.http = http_client or httpx2.AsyncClient(
            headers=headers, timeout=httpx2.Timeout(30.0, read=None)
        )
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._in_flight: dict[Any, tuple[asyncio.Task[None], bool]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._listener: asyncio.Task[None] | None = None

    def emit(self, message: Any) -> None:
        """Write one message to stdout as a single line."""
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        with self._write_lock:
            self._write(data + b"\n")

    def _headers(self, message: dict[str, Any]) -> dict[str, str]:
        from mcp.shared.inbound import encode_header_value

        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        }
        modern = _modern_version(message)
        if modern is not None:
            headers["MCP-Protocol-Version"] = modern
            method = message.get("method")
            if isinstance(method, str):
                headers["Mcp-Method"] = method
                key = NAME_BEARING_METHODS.get(method)
                params = message.get("params") or {}
                if key and isinstance(params.get(key), str):
                    headers["Mcp-Name"] = encode_header_value(params[key])
            return headers
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    async def handle_line(self, line: bytes) -> None:
        """Relay one line from stdin (a request, notification or response)."""
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except ValueError:
            self.emit(_error(None, -32700, "Parse error: a line on stdin is not JSON"))
            return
        if not isinstance(message, dict):
            self.emit(
                _error(None, -32600, "Invalid request: expected one JSON-RPC object per line")
            )
            return
        if message.get("method") == "notifications/cancelled":
            cancelled = (message.get("params") or {}).get("requestId")
            entry = self._in_flight.get(cancelled)
            if entry is not None and entry[1]:
                # 2026-07-28: closing the response stream is what cancels the call.
                entry[0].cancel()
                return
        modern = _modern_version(message) is not None
        task = asyncio.get_running_loop().create_task(self._post(message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if "method" in message and "id" in message:
            request_id = message["id"]
            self._in_flight[request_id] = (task, modern)
            task.add_done_callback(functools.partial(self._settled, request_id))
        if message.get("method") == "initialize":
            # Later messages need the session id that this answer brings.
            await asyncio.shield(task)

    def _settled(self, request_id: Any, _task: asyncio.Task[None]) -> None:
        self._in_flight.pop(request_id, None)

    async def _post(self, message: dict[str, Any]) -> None:
        request_id = message.get("id") if "method" in message else None
        body = json.dumps(message).encode("utf-8")
        try:
            async with self.http.stream(
                "POST", self.target.mcp_url, content=body, headers=self._headers(message)
            ) as response:
                await self._read_response(message, request_id, response)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.warning("jupyter-mcp: request to %s failed: %s", self.target.mcp_url, e)
            if request_id is not None:
                self.emit(_error(request_id, -32603, f"Jupyter server unreachable: {e}"))

    async def _read_response(self, message: dict[str, Any], request_id: Any, response: Any) -> None:
        session = response.headers.get("mcp-session-id")
        if session and message.get("method") == "initialize":
            self.session_id = session
        content_type = response.headers.get("content-type", "")
        if response.status_code == 202 or request_id is None and response.status_code < 400:
            await response.aread()
            return
        if content_type.startswith("text/event-stream"):
            buffer = ""
            async for chunk in response.aiter_text():
                payloads, buffer = sse_messages(buffer + chunk)
                for payload in payloads:
                    self._forward(payload, message)
            return
        data = await response.aread()
        try:
            answer = json.loads(data) if data else None
        except ValueError:
            answer = None
        if isinstance(answer, dict) and answer.get("jsonrpc") == "2.0":
            if request_id is not None and answer.get("id") is None and "error" in answer:
                answer["id"] = request_id  # let the client match the refusal to its request
            self._note(answer, message)
            if request_id is not None or answer.get("id") is not None:
                self.emit(answer)
            return
        if request_id is not None:
            text = data.decode("utf-8", "replace").strip()[:500]
            self.emit(
                _error(
                    request_id,
                    -32603,
                    f"Jupyter server answered HTTP {response.status_code}: "
                    f"{text or response.reason_phrase}",
                )
            )

    def _forward(self, payload: str, message: dict[str, Any]) -> None:
        try:
            answer = json.loads(payload)
        except ValueError:
            log.warning("jupyter-mcp: dropped a malformed event from the server")
            return
        if isinstance(answer, dict):
            self._note(answer, message)
        self.emit(answer)

    def _note(self, answer: dict[str, Any], message: dict[str, Any]) -> None:
        if message.get("method") == "initialize" and isinstance(answer.get("result"), dict):
            version = answer["result"].get("protocolVersion")
            if isinstance(version, str):
                self.protocol_version = version
            if self.session_id and self._listener is None:
                self._listener = asyncio.get_running_loop().create_task(self._listen())

    async def _listen(self) -> None:
        """The legacy session's GET stream: server-initiated notifications and requests."""
        delay = 1.0
        while self.session_id:
            headers = {"Accept": "text/event-stream", "Mcp-Session-Id": self.session_id}
            if self.protocol_version:
                headers["MCP-Protocol-Version"] = self.protocol_version
            try:
                async with self.http.stream(
                    "GET", self.target.mcp_url, headers=headers
                ) as response:
                    if response.status_code in (404, 405, 406):
                        return  # no stream offered, or the session is gone
                    if response.status_code >= 400:
                        raise RuntimeError(f"HTTP {response.status_code}")
                    delay = 1.0
                    buffer = ""
                    async for chunk in response.aiter_text():
                        payloads, buffer = sse_messages(buffer + chunk)
                        for payload in payloads:
                            self._forward(payload, {})
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.info("jupyter-mcp: notification stream interrupted (%s); reconnecting", e)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 30.0)

    async def close(self) -> None:
        """Wait for answers still coming, end the session, close the connection."""
        pending = [t for t in self._tasks if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=30)
        if self._listener is not None:
            self._listener.cancel()
        if self.session_id:
            try:
                await self.http.delete(
                    self.target.mcp_url,
                    headers={
                        "Mcp-Session-Id": self.session_id,
                        **(
                            {"MCP-Protocol-Version": self.protocol_version}
                            if self.protocol_version
                            else {}
                        ),
                    },
                )
            except Exception as e:
                log.debug("jupyter-mcp: ending the session failed: %s", e)
        await self.http.aclose()


async def relay_stdio(target: ServerTarget) -> None:
    """Relay stdin to the server and the server's messages to stdout until stdin closes."""
    stdout = sys.stdout.buffer

    def write(data: bytes) -> None:
        stdout.write(data)
        stdout.flush()

    relay = Relay(target, write)
    stdin = sys.stdin.buffer
    try:
        while True:
            line = await asyncio.to_thread(stdin.readline)
            if not line:
                break
            await relay.handle_line(line)
    finally:
        await relay.close()


# -- commands -----------------------------------------------------------------------------


def _add_server_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url",
        help="The Jupyter server's URL (e.g. http://localhost:8888/); default: the running "
        "server that serves --root.",
    )
    parser.add_argument(
        "--token", help="The server's token; default: from its runtime file, or $JUPYTER_TOKEN."
    )
    parser.add_argument(
        "--root",
        help="Find the server that serves this folder (default: the current folder).",
    )


def run_stdio(args: argparse.Namespace) -> int:
    """``stdio``: relay MCP between stdin/stdout and the running server."""
    target = resolve_target(args.url, args.token, args.root)
    log.info("jupyter-mcp: relaying stdio to %s", target.mcp_url)
    try:
        asyncio.run(relay_stdio(target))
    except KeyboardInterrupt:
        pass
    return 0


def print_config(args: argparse.Namespace) -> int:
    """``config``: print the lines that add the server to MCP clients."""
    from .clients import client_snippets

    target = resolve_target(args.url, args.token, args.root)
    root = target.root_dir or args.root or os.getcwd()
    print(client_snippets(target.mcp_url, target.token, root_dir=root))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per job."""
    parser = argparse.ArgumentParser(
        prog="jupyter-mcp",
        description="Connect MCP clients to a running Jupyter server (jupyter-mcp extension).",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="Log more (to stderr).")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    stdio = commands.add_parser(
        "stdio",
        help="Relay MCP over stdin/stdout to the running server that serves this folder.",
    )
    _add_server_arguments(stdio)
    stdio.set_defaults(handler=run_stdio)
    config = commands.add_parser(
        "config",
        help="Print how to add the server to Claude Code, Claude Desktop and Cursor.",
    )
    _add_server_arguments(config)
    config.set_defaults(handler=print_config)
    from .launcher import add_stdio_command_parser

    add_stdio_command_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``jupyter-mcp`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(message)s",
    )
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(handler(args) or 0)
    except BridgeError as e:
        print(f"jupyter-mcp: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
