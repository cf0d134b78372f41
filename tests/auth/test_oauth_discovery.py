"""Discovery: what an MCP client without credentials finds at ``/mcp``, on a real server.

The 401 names the Protected Resource Metadata (RFC 9728), which names this server as its
authorization server, whose metadata (RFC 8414) is served where a client looks for an issuer
with a path: the OpenID path appended under the prefix (``/a%40b/`` here, ``/user/<name>/``
under JupyterHub, where the host's root is the hub's). Jupyter's own token keeps working.
"""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from oauth_fixtures import Server, post_initialize
from traitlets import TraitError

from jupyter_mcp.app import JupyterMCP
from jupyter_mcp.surfaces.base import not_authenticated_reason

ACCEPT = "application/json, text/event-stream"


async def post_mcp(server: Server, headers: dict[str, str] | None = None) -> httpx2.Response:
    headers = {"Accept": ACCEPT, **(headers or {})}
    return await post_initialize(server.mcp, headers, accept=headers.pop("Accept"))


async def get(url: str, **headers: str) -> httpx2.Response:
    async with httpx2.AsyncClient() as http:
        return await http.get(url, headers=headers)


async def test_a_request_without_credentials_is_told_where_to_authorize(server: Server) -> None:
    answer = await post_mcp(server)

    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"] == (
        f'Bearer resource_metadata="{server.base}.well-known/oauth-protected-resource/mcp", '
        'scope="mcp"'
    )
    assert answer.json()["error"]["message"] == not_authenticated_reason(oauth=True)


async def test_the_resource_metadata_names_this_server_and_its_authorization_server(
    server: Server,
) -> None:
    answer = await get(f"{server.base}.well-known/oauth-protected-resource/mcp")

    assert answer.status_code == 200
    assert answer.json() == {
        "resource": server.mcp,
        "authorization_servers": [server.issuer],
        "scopes_supported": ["mcp"],
        "bearer_methods_supported": ["header"],
        "resource_name": "Jupyter server (jupyter-mcp IDE tools)",
    }


@pytest.mark.parametrize("document", ["openid-configuration", "oauth-authorization-server"])
async def test_the_authorization_server_metadata_is_served_under_the_prefix(
    server: Server, document: str
) -> None:
    answer = await get(f"{server.base}.well-known/{document}")
    metadata = answer.json()

    assert answer.status_code == 200
    assert metadata["issuer"] == server.issuer
    assert metadata["authorization_endpoint"] == server.endpoint("authorize")
    assert metadata["token_endpoint"] == server.endpoint("token")
    assert metadata["registration_endpoint"] == server.endpoint("register")
    assert metadata["revocation_endpoint"] == server.endpoint("revoke")
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["response_types_supported"] == ["code"]
    assert metadata["grant_types_supported"] == ["authorization_code", "refresh_token"]
    assert metadata["client_id_metadata_document_supported"] is True
    assert metadata["authorization_response_iss_parameter_supported"] is True
    assert "none" in metadata["token_endpoint_auth_methods_supported"]
    assert metadata["scopes_supported"][:2] == ["mcp", "mcp:read"]
    assert "mcp:toolsets:files" in metadata["scopes_supported"]


async def test_browser_clients_may_read_the_metadata(server: Server) -> None:
    origin = "https://inspector.example"
    answer = await get(f"{server.base}.well-known/openid-configuration", Origin=origin)

    assert answer.headers["Access-Control-Allow-Origin"] == "*"


async def test_jupyters_token_still_opens_the_mcp_endpoint(server: Server) -> None:
    answer = await post_mcp(
        server, {"Authorization": f"token {server.token}", "Accept": "application/json"}
    )

    assert answer.status_code == 200
    assert answer.json()["result"]["serverInfo"]["name"] == "jupyter-mcp"


async def test_a_wrong_jupyter_token_is_refused_as_before(server: Server) -> None:
    answer = await post_mcp(server, {"Authorization": "token wrong"})

    assert answer.status_code == 403
    assert "WWW-Authenticate" not in answer.headers


async def test_a_bearer_token_that_is_not_this_servers_gets_the_challenge(server: Server) -> None:
    answer = await post_mcp(server, {"Authorization": "Bearer not-a-token-of-ours"})

    assert answer.status_code == 401
    assert answer.headers["WWW-Authenticate"].startswith('Bearer error="invalid_token"')
    assert "resource_metadata=" in answer.headers["WWW-Authenticate"]


async def test_over_http_to_a_network_address_oauth_is_not_offered(server: Server) -> None:
    # The Host a request names decides the issuer; plain http is fine only on loopback.
    headers = {"Host": "lab.example.org"}
    server.app.serverapp.web_app.settings["allow_remote_access"] = True
    try:
        challenge = await post_mcp(server, headers)
        metadata = await get(f"{server.base}.well-known/openid-configuration", **headers)
    finally:
        server.app.serverapp.web_app.settings["allow_remote_access"] = False

    assert challenge.status_code == 403
    assert "WWW-Authenticate" not in challenge.headers
    assert metadata.status_code == 400
    assert "https" in metadata.json()["error_description"]


@pytest.fixture
def behind_a_tunnel(server: Server) -> Any:
    settings = server.app.serverapp.web_app.settings
    settings["allow_remote_access"] = True
    yield {"Host": "lab.example.org"}
    settings["allow_remote_access"] = False


@pytest.mark.parametrize("oauth_settings", [{"oauth_public_url": "https://lab.example.org/"}])
async def test_the_public_url_makes_the_issuer_behind_a_tunnel(
    server: Server, behind_a_tunnel: dict[str, str]
) -> None:
    challenge = await post_mcp(server, behind_a_tunnel)
    metadata = await get(f"{server.base}.well-known/openid-configuration", **behind_a_tunnel)

    assert challenge.status_code == 401
    assert (
        'resource_metadata="https://lab.example.org/.well-known/oauth-protected-resource/mcp"'
        in challenge.headers["WWW-Authenticate"]
    )
    assert metadata.json()["issuer"] == "https://lab.example.org"
    assert metadata.json()["token_endpoint"] == "https://lab.example.org/mcp/oauth/token"


@pytest.mark.parametrize("oauth_settings", [{"oauth": False}])
async def test_oauth_false_turns_it_all_off(server: Server) -> None:
    challenge = await post_mcp(server)
    metadata = await get(f"{server.base}.well-known/openid-configuration")
    authorize = await get(server.endpoint("authorize"))
    bearer = await post_mcp(server, {"Authorization": "Bearer jmcp_at_x"})

    assert challenge.status_code == 403
    assert "WWW-Authenticate" not in challenge.headers
    # Jupyter's answer to a page it does not have (a login redirect or a 404).
    assert metadata.status_code in (302, 404) and authorize.status_code in (302, 404)
    assert bearer.status_code == 403
    assert server.oauth is None


@pytest.mark.parametrize("oauth_settings", [{"oauth_dynamic_registration": False}])
async def test_without_dynamic_registration_only_metadata_documents_remain(
    server: Server,
) -> None:
    metadata = (await get(f"{server.base}.well-known/openid-configuration")).json()
    async with httpx2.AsyncClient() as http:
        register = await http.post(server.endpoint("register"), json={"redirect_uris": []})

    assert "registration_endpoint" not in metadata
    assert metadata["client_id_metadata_document_supported"] is True
    assert register.status_code in (403, 404)  # Jupyter's answer to a post it has no route for
    assert server.stored().get("clients", {}) == {}


@pytest.mark.parametrize(
    "url", ["http://lab.example.org/", "https://lab.example.org/?x=1", "lab.example.org"]
)
def test_an_unusable_public_url_stops_the_server_from_starting(url: str) -> None:
    # An invalid jupyter_mcp setting stops the server (see the app), this one included.
    with pytest.raises(TraitError, match="oauth_public_url"):
        JupyterMCP(oauth_public_url=url)

    assert JupyterMCP(oauth_public_url="https://lab.example.org/jupyter/").oauth_public_url
