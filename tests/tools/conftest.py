"""What the notebook, kernel and debugger tool tests share.

An official SDK client of the test server (``connect``), no kernel left behind by a test, and
the two places a notebook can live (``BOTH_BACKENDS``, see ``tests/live_documents.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from live_documents import (  # noqa: F401 - fixtures of this folder
    _no_kernels_left,
    _saves_finished,
    collaboration,
    jp_server_config,
    parametrize_backends,
)
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

pytest_generate_tests = parametrize_backends


@pytest.fixture
def connect(
    http_server: Any, http_server_port: tuple[Any, int], jp_base_url: str, jp_serverapp: Any
):  # type: ignore[no-untyped-def]
    """``async with connect() as client``: a legacy-era SDK client of the test server's /mcp."""
    url = f"http://127.0.0.1:{http_server_port[1]}{jp_base_url}mcp"
    token = jp_serverapp.identity_provider.token

    @asynccontextmanager
    async def _connect() -> AsyncIterator[Client]:
        # As MCP clients do, a tool call may take minutes before it answers (httpx's own
        # default gives up on a silent answer after 5 s).
        timeout = httpx2.Timeout(30.0, read=300.0)
        headers = {"Authorization": f"token {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
            async with Client(
                streamable_http_client(url, http_client=http), mode="legacy"
            ) as client:
                yield client

    return _connect
