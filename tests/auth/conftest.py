"""Fixtures of the OAuth tests: a real server (in this process) that fetches client metadata
from loopback, a client site beside it, and the SDK's OAuth client on both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from oauth_client import ClientSite, consent_with_token, pkce
from oauth_fixtures import Authorization, Server
from server_configs import server_config


@pytest.fixture
def oauth_file(tmp_path: Path) -> Path:
    return tmp_path / "oauth" / "oauth.json"


@pytest.fixture
def oauth_settings() -> dict[str, Any]:
    """Extra ``JupyterMCP`` settings of the test server (a test overrides this fixture)."""
    return {}


@pytest.fixture
def jp_server_config(oauth_file: Path, oauth_settings: dict[str, Any]) -> dict[str, Any]:
    config = server_config()
    config["JupyterMCP"] = {
        # The client's documents are on loopback, over http, in these tests.
        "oauth_allow_insecure_client_metadata": True,
        "oauth_file": str(oauth_file),
        **oauth_settings,
    }
    return config


@pytest.fixture
def client_site(jp_asyncio_loop: Any) -> Iterator[ClientSite]:
    site = ClientSite()
    yield site
    site.close()


@pytest.fixture
def server(
    jp_serverapp: Any, http_server: Any, http_server_port: Any, jp_base_url: str, oauth_file: Path
) -> Server:
    app = jp_serverapp.extension_manager.extension_apps["jupyter_mcp"].copy().pop()
    return Server(
        base=f"http://127.0.0.1:{http_server_port[1]}{jp_base_url}",
        token=jp_serverapp.identity_provider.token,
        app=app,
        file=oauth_file,
    )


@pytest.fixture
def authorize(server: Server, client_site: ClientSite) -> Any:
    """``await authorize(**params)``: one authorization request with PKCE, answered on the
    consent page with the Jupyter token; the client's callback query comes back."""

    async def _authorize(
        client_id: str | None = None,
        *,
        consent: dict[str, Any] | None = None,
        **params: str,
    ) -> Authorization:
        from urllib.parse import urlencode

        client_id = client_id or client_site.publish()
        verifier, challenge = pkce()
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": client_site.callback_url,
            "state": "the-state",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": server.mcp,
            "scope": "mcp",
            **params,
        }
        url = f"{server.endpoint('authorize')}?{urlencode({k: v for k, v in query.items() if v})}"
        await consent_with_token(url, server.token, **(consent or {}))
        answer = await client_site.next_callback(timeout=30)
        return Authorization(
            client_id, query["redirect_uri"], verifier, answer.get("code", ""), answer
        )

    return _authorize
