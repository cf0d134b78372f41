"""What the view tests share: SDK clients of the test server that do, or do not, show views."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client import advertise
from mcp.client.streamable_http import streamable_http_client

from jupyter_mcp.views.catalog import APP_MIME_TYPE, EXTENSION_ID, pages_built

#: The extension as a client that shows views declares it.
SHOWS_VIEWS = {"mimeTypes": [APP_MIME_TYPE]}


@pytest.fixture(autouse=True)
def _pages_built() -> None:
    if not pages_built():
        pytest.fail("the view pages are not built: make labextension (make test does it)")


@pytest.fixture
def connect(
    http_server: Any, http_server_port: tuple[Any, int], jp_base_url: str, jp_serverapp: Any
):  # type: ignore[no-untyped-def]
    """``async with connect(mode, views=…) as client``: an SDK client of the server's /mcp
    that declares the Apps extension (``views=True``) or not."""
    url = f"http://127.0.0.1:{http_server_port[1]}{jp_base_url}mcp"
    token = jp_serverapp.identity_provider.token

    @asynccontextmanager
    async def _connect(mode: str, *, views: bool) -> AsyncIterator[Client]:
        extensions = [advertise(EXTENSION_ID, SHOWS_VIEWS)] if views else None
        async with httpx2.AsyncClient(
            headers={"Authorization": f"token {token}"}, timeout=120
        ) as http:
            async with Client(
                streamable_http_client(url, http_client=http), mode=mode, extensions=extensions
            ) as client:
                yield client

    return _connect


@pytest.fixture(autouse=True)
def _no_kernels_left(no_kernels_left: None) -> None:
    """Every test here ends the kernel sessions it left (tests/conftest.py)."""
