"""What the OAuth tests' fixtures (conftest.py) give the tests: the server as an OAuth client
sees it, and an authorization made by hand. A module of its own, not conftest: test modules
import these, and ``conftest`` is the name of several modules of the suite."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from mcp_messages import initialize

#: A 2025-11-25 ``initialize``: the first thing a client posts to ``/mcp``.
INITIALIZE = initialize(client="raw")


async def post_initialize(
    url: str, headers: dict[str, str], *, accept: str = "application/json"
) -> httpx2.Response:
    """POST :data:`INITIALIZE` to ``url`` with ``headers`` (the answer, not checked)."""
    async with httpx2.AsyncClient() as http:
        return await http.post(
            url,
            content=json.dumps(INITIALIZE),
            headers={"Content-Type": "application/json", "Accept": accept, **headers},
        )


@dataclass
class Server:
    """The test server as an OAuth client sees it."""

    base: str  # http://127.0.0.1:PORT/a%40b/
    token: str  # the Jupyter token (the user's; consent is given with it)
    app: Any  # the JupyterMCP extension app
    file: Path

    @property
    def mcp(self) -> str:
        return f"{self.base}mcp"

    @property
    def issuer(self) -> str:
        return self.base.rstrip("/")

    def endpoint(self, name: str) -> str:
        return f"{self.base}mcp/oauth/{name}"

    @property
    def oauth(self) -> Any:
        return self.app.tool_context.services.oauth

    def stored(self) -> dict[str, Any]:
        """The grants file as it is on disk now."""
        return json.loads(self.file.read_text()) if self.file.exists() else {}


@dataclass
class Authorization:
    """An authorization request made by hand: what the token request needs."""

    client_id: str
    redirect_uri: str
    verifier: str
    code: str
    query: dict[str, str]
