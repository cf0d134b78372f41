"""The raw JSON-RPC messages the tests post to ``/mcp`` by hand (no SDK client), written once."""

from __future__ import annotations

from typing import Any


def initialize(
    version: str = "2025-11-25",
    *,
    id: int = 1,
    client: str = "raw-http",
    capabilities: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A legacy-era ``initialize``: the first message a client posts to open a session."""
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": capabilities or {},
            "clientInfo": {"name": client, "version": "0"},
        },
    }


#: What a client posts once the session's ``initialize`` is answered.
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
