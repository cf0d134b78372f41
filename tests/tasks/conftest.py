"""What the task tests share: the test server's ``/mcp`` URL and token."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def mcp_url(http_server: Any, http_server_port: tuple[Any, int], jp_base_url: str) -> str:
    """The Streamable HTTP endpoint of the running test server."""
    return f"http://127.0.0.1:{http_server_port[1]}{jp_base_url}mcp"


@pytest.fixture
def token(jp_serverapp: Any) -> str:
    return jp_serverapp.identity_provider.token
