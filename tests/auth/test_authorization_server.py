"""The authorization server's refusals, each with its RFC's error, each changing nothing.

A real server in this process; the client's metadata documents and its callback on loopback
(``ClientSite``); the consent page answered with the Jupyter token (``consent_with_token``),
since these tests are about what the endpoints refuse, not about a person clicking (the
browser tests do that). "Changes nothing" is checked on the grants file on disk.
"""

from __future__ import annotations

import html
import json
import re
import time
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
import pytest
from oauth_client import ClientSite, Document, consent_with_token, free_port, pkce
from oauth_fixtures import Server

from jupyter_mcp.auth import client_metadata


async def token_request(server: Server, **form: str) -> httpx2.Response:
    async with httpx2.AsyncClient() as http:
        return await http.post(server.endpoint("token"), data=form)


async def exchange(server: Server, grant: Any, **changes: str) -> httpx2.Response:
    form = {
        "grant_type": "authorization_code",
        "code": grant.code,
        "redirect_uri": grant.redirect_uri,
        "client_id": grant.client_id,
        "code_verifier": grant.verifier,
        "resource": server.mcp,
        **changes,
    }
    return await token_request(server, **{k: v for k, v in form.items() if v is not None})


async def authorize_url(server: Server, **params: str) -> httpx2.Response:
    """The authorization endpoint's answer (not followed)."""
    async with httpx2.AsyncClient() as http:
        return await http.get(f"{server.endpoint('authorize')}?{urlencode(params)}")


def refusal_query(answer: httpx2.Response) -> dict[str, str]:
    """The query of the link back to the client on an authorization error's page.

    The error is a page, never a redirect: nobody has logged in yet, and a redirect would make
    the server an open redirector for any registered client (RFC 9700 §4.11.2).
    """
    assert answer.status_code == 400, (answer.status_code, answer.text)
    assert "Location" not in answer.headers
    assert answer.headers["Content-Type"].startswith("text/html")
    assert "frame-ancestors 'none'" in answer.headers["Content-Security-Policy"]
    found = re.search(r'<a id="back" href="([^"]*)"', answer.text)
    assert found, answer.text
    query = {k: v[0] for k, v in parse_qs(urlsplit(html.unescape(found[1])).query).items()}
    # The page says the RFC error and its description too.
    page = html.unescape(answer.text)
    assert f'<code id="error">{query["error"]}</code>' in page
    assert query["error_description"] in page
    return query


def params(client_site: ClientSite, server: Server, **changes: str | None) -> dict[str, str]:
    _, challenge = pkce()
    query: dict[str, str | None] = {
        "response_type": "code",
        "client_id": client_site.publish(),
        "redirect_uri": client_site.callback_url,
        "state": "s1",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": server.mcp,
        "scope": "mcp",
        **changes,
    }
    return {k: v for k, v in query.items() if v is not None}


# --- a code, exchanged ------------------------------------------------------------------


async def test_a_code_with_its_verifier_gives_tokens_bound_to_this_server(
    server: Server, authorize: Any
) -> None:
    grant = await authorize()

    answer = await exchange(server, grant)
    tokens = answer.json()
    stored = server.stored()["grants"]

    assert grant.query["iss"] == server.issuer and grant.query["state"] == "the-state"
    assert answer.status_code == 200, tokens
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 3600
    assert tokens["scope"] == "mcp"
    assert tokens["access_token"].startswith("jmcp_at_")
    assert tokens["refresh_token"].startswith("jmcp_rt_")
    [record] = stored.values()
    assert record["resource"] == server.mcp and record["client_id"] == grant.client_id
    # Kept as digests: the file has no token in it.
    text = server.file.read_text()
    assert tokens["access_token"] not in text and tokens["refresh_token"] not in text
    assert server.file.stat().st_mode & 0o777 == 0o600


async def test_a_wrong_pkce_verifier_is_invalid_grant_and_the_code_stays_good(
    server: Server, authorize: Any
) -> None:
    grant = await authorize()

    wrong = await exchange(server, grant, code_verifier=pkce()[0])
    files_after_wrong = server.stored()
    right = await exchange(server, grant)

    assert wrong.status_code == 400
    assert wrong.json() == {
        "error": "invalid_grant",
        "error_description": "incorrect code_verifier",
    }
    assert files_after_wrong.get("grants", {}) == {}
    assert right.status_code == 200


async def test_a_missing_pkce_verifier_is_invalid_request(server: Server, authorize: Any) -> None:
    grant = await authorize()

    answer = await exchange(server, grant, code_verifier=None)  # type: ignore[arg-type]

    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_request"
    assert "code_verifier" in answer.json()["error_description"]
    assert server.stored().get("grants", {}) == {}


async def test_an_authorization_request_without_pkce_is_refused_on_a_page_linking_back(
    server: Server, client_site: ClientSite
) -> None:
    answer = refusal_query(
        await authorize_url(server, **params(client_site, server, code_challenge=None))
    )

    assert answer["error"] == "invalid_request"
    assert "code_challenge" in answer["error_description"]
    assert answer["state"] == "s1"
    assert answer["iss"] == server.issuer  # RFC 9207, on error responses too


async def test_the_plain_pkce_method_is_refused(server: Server, client_site: ClientSite) -> None:
    answer = refusal_query(
        await authorize_url(server, **params(client_site, server, code_challenge_method="plain"))
    )

    assert answer["error"] == "invalid_request"
    assert "S256" in answer["error_description"]


async def test_a_code_used_twice_is_refused_and_what_it_gave_is_revoked(
    server: Server, authorize: Any
) -> None:
    grant = await authorize()
    first = await exchange(server, grant)
    assert first.status_code == 200 and len(server.stored()["grants"]) == 1

    again = await exchange(server, grant)

    assert again.status_code == 400
    assert again.json()["error"] == "invalid_grant"
    assert "already exchanged" in again.json()["error_description"]
    # RFC 6749 10.5: whoever exchanged it first may be the thief.
    assert server.stored()["grants"] == {}


async def test_a_code_past_its_minute_is_refused(server: Server, authorize: Any) -> None:
    grant = await authorize()
    oauth = server.oauth
    oauth.clock = lambda: time.time() + 61

    answer = await exchange(server, grant)

    assert answer.status_code == 400
    assert answer.json() == {
        "error": "invalid_grant",
        "error_description": "authorization code has expired",
    }
    assert server.stored().get("grants", {}) == {}


async def test_a_code_exchanged_with_another_redirect_uri_is_refused(
    server: Server, authorize: Any, client_site: ClientSite
) -> None:
    grant = await authorize()

    answer = await exchange(server, grant, redirect_uri=f"{client_site.url}/elsewhere")

    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_request"
    assert "redirect_uri" in answer.json()["error_description"]
    assert server.stored().get("grants", {}) == {}


# --- redirect URIs ---------------------------------------------------------------------


async def test_a_redirect_uri_the_client_does_not_have_is_refused_without_redirecting(
    server: Server, client_site: ClientSite
) -> None:
    answer = await authorize_url(
        server, **params(client_site, server, redirect_uri="https://evil.example/callback")
    )

    assert answer.status_code == 400  # never sent to a URI the client does not own
    assert answer.json()["error"] == "invalid_request"
    assert "evil.example" in answer.json()["error_description"]


async def test_a_loopback_redirect_may_use_any_port(
    server: Server, client_site: ClientSite, authorize: Any
) -> None:
    # The document says http://127.0.0.1:<port>/callback; a native client picks its port
    # when it starts (RFC 8252 7.3). Its callback here is the site's, on its own port.
    client_id = client_site.publish(redirect_uris=["http://127.0.0.1:1/callback"])
    other_port = await authorize_url(
        server,
        **params(
            client_site, server, client_id=client_id, redirect_uri="http://127.0.0.1:9/callback"
        ),
    )
    other_path = await authorize_url(
        server,
        **params(client_site, server, client_id=client_id, redirect_uri="http://127.0.0.1:9/x"),
    )

    assert other_port.status_code == 302
    assert "/mcp/oauth/consent?" in other_port.headers["Location"]
    assert other_path.status_code == 400


async def test_an_https_redirect_must_match_exactly(
    server: Server, client_site: ClientSite
) -> None:
    client_id = client_site.publish(redirect_uris=["https://app.example/cb"])
    answer = await authorize_url(
        server,
        **params(
            client_site, server, client_id=client_id, redirect_uri="https://app.example:8443/cb"
        ),
    )

    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_request"


# --- resource indicators ---------------------------------------------------------------


async def test_a_foreign_resource_is_invalid_target_at_the_authorization_endpoint(
    server: Server, client_site: ClientSite
) -> None:
    answer = refusal_query(
        await authorize_url(
            server, **params(client_site, server, resource="https://other.example/mcp")
        )
    )

    assert answer["error"] == "invalid_target"
    assert "other.example" in answer["error_description"]
    assert answer["iss"] == server.issuer


async def test_a_foreign_resource_is_invalid_target_at_the_token_endpoint(
    server: Server, authorize: Any
) -> None:
    grant = await authorize()

    answer = await exchange(server, grant, resource="http://127.0.0.1:1/mcp")
    good = await exchange(server, grant)

    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_target"
    assert good.status_code == 200  # the refusal spent nothing


async def test_the_servers_root_is_accepted_as_its_resource(server: Server, authorize: Any) -> None:
    grant = await authorize(resource=server.issuer)

    answer = await exchange(server, grant, resource=server.issuer)

    assert answer.status_code == 200
    [record] = server.stored()["grants"].values()
    assert record["resource"] == server.mcp  # always the MCP endpoint itself


# --- scopes ----------------------------------------------------------------------------


async def test_an_unknown_scope_is_invalid_scope(server: Server, client_site: ClientSite) -> None:
    answer = refusal_query(
        await authorize_url(server, **params(client_site, server, scope="mcp admin"))
    )

    assert answer["error"] == "invalid_scope"
    assert "'admin'" in answer["error_description"]


async def test_an_unknown_tool_set_in_a_scope_is_invalid_scope(
    server: Server, client_site: ClientSite
) -> None:
    answer = refusal_query(
        await authorize_url(server, **params(client_site, server, scope="mcp:toolsets:files,nope"))
    )

    assert answer["error"] == "invalid_scope"
    assert "nope" in answer["error_description"]


async def test_the_user_narrows_what_the_client_gets(server: Server, authorize: Any) -> None:
    grant = await authorize(consent={"read_only": True, "toolsets": ["files", "search"]})

    tokens = (await exchange(server, grant)).json()

    assert tokens["scope"] == "mcp mcp:read mcp:toolsets:files,search"


async def test_a_client_that_asked_for_read_only_gets_no_more(
    server: Server, authorize: Any
) -> None:
    # The checkbox is checked and disabled on the page; a hand-made post cannot undo it.
    grant = await authorize(scope="mcp:read", consent={"read_only": False})

    tokens = (await exchange(server, grant)).json()

    assert tokens["scope"] == "mcp:read"


async def test_the_user_cannot_grant_tool_sets_the_client_did_not_ask_for(
    server: Server, client_site: ClientSite
) -> None:
    query = params(client_site, server, scope="mcp:toolsets:files")
    url = f"{server.endpoint('authorize')}?{urlencode(query)}"

    page = await consent_with_token(url, server.token, toolsets=["files", "terminal"])

    assert page.status_code == 200
    assert "did not ask for the tool sets terminal" in page.text
    assert server.stored().get("grants", {}) == {}


async def test_refreshing_with_more_than_the_grant_is_invalid_scope(
    server: Server, authorize: Any
) -> None:
    grant = await authorize(consent={"read_only": True})
    tokens = (await exchange(server, grant)).json()
    before = server.stored()

    # "mcp" alone would drop the read-only restriction the user chose.
    answer = await token_request(
        server,
        grant_type="refresh_token",
        refresh_token=tokens["refresh_token"],
        client_id=grant.client_id,
        scope="mcp",
    )

    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_scope"
    assert "read-only" in answer.json()["error_description"]
    assert server.stored() == before


async def test_refreshing_with_a_scope_never_granted_is_invalid_scope(
    server: Server, authorize: Any
) -> None:
    grant = await authorize(scope="mcp:toolsets:files")
    tokens = (await exchange(server, grant)).json()

    answer = await token_request(
        server,
        grant_type="refresh_token",
        refresh_token=tokens["refresh_token"],
        client_id=grant.client_id,
        scope="mcp:toolsets:git",
    )

    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_scope"


# --- refresh rotation ------------------------------------------------------------------


async def test_a_refresh_rotates_both_tokens(server: Server, authorize: Any) -> None:
    grant = await authorize()
    tokens = (await exchange(server, grant)).json()

    answer = await token_request(
        server,
        grant_type="refresh_token",
        refresh_token=tokens["refresh_token"],
        client_id=grant.client_id,
        resource=server.mcp,
    )
    fresh = answer.json()

    assert answer.status_code == 200, fresh
    assert fresh["refresh_token"] != tokens["refresh_token"]
    assert fresh["access_token"] != tokens["access_token"]
    assert fresh["scope"] == "mcp"


async def test_a_refresh_token_used_twice_revokes_the_grant(server: Server, authorize: Any) -> None:
    grant = await authorize()
    tokens = (await exchange(server, grant)).json()
    form = {
        "grant_type": "refresh_token",
        "refresh_token": tokens["refresh_token"],
        "client_id": grant.client_id,
    }
    await token_request(server, **form)

    again = await token_request(server, **form)

    assert again.status_code == 400
    assert again.json()["error"] == "invalid_grant"
    assert "already used" in again.json()["error_description"]
    assert server.stored()["grants"] == {}


async def test_a_refresh_token_of_another_client_does_not_exist(
    server: Server, authorize: Any, client_site: ClientSite
) -> None:
    grant = await authorize()
    tokens = (await exchange(server, grant)).json()
    before = server.stored()

    answer = await token_request(
        server,
        grant_type="refresh_token",
        refresh_token=tokens["refresh_token"],
        client_id=client_site.publish("other.json", client_name="Other"),
    )

    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_grant"
    assert server.stored() == before


# --- client metadata documents -----------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("not https", "must use https"),
        ("private address", "not a public address"),
        ("cloud metadata address", "not a public address"),
        ("mapped loopback address", "not a public address"),
        ("loopback by name", "not a public address"),
        ("fragment", "fragment"),
        ("no path", "must have a path"),
        ("dot segments", "must have a path"),
        ("user info", "user name or password"),
        ("redirect", "redirects"),
        ("too large", "larger than 5120 bytes"),
        ("slow", "could not be fetched (no answer within"),
        ("closed port", "could not be fetched (no answer within"),
        ("not found", "HTTP 404"),
        ("not json", "not application/json"),
        ("invalid json", "not valid JSON"),
        ("another client_id", "must be the document's own URL"),
        ("no redirect_uris", "lists no redirect_uris"),
        ("no client_name", "has no client_name"),
        ("a secret", "cannot hold a secret"),
        ("a secret method", "public clients"),
        ("http redirect elsewhere", "plain http is allowed only to this machine"),
    ],
)
async def test_a_bad_client_metadata_url_is_invalid_client(
    server: Server, client_site: ClientSite, monkeypatch: pytest.MonkeyPatch, case: str, says: str
) -> None:
    site = client_site
    urls = {
        "private address": "https://10.11.12.13/client.json",
        "cloud metadata address": "https://169.254.169.254/latest/meta-data/client.json",
        "mapped loopback address": f"https://[::ffff:127.0.0.1]:{site.port}/client.json",
        "loopback by name": f"https://localhost:{site.port}/client.json",
        "fragment": site.publish() + "#x",
        "no path": f"{site.url}/",
        "dot segments": f"{site.url}/a/../client.json",
        "user info": f"http://me:pw@127.0.0.1:{site.port}/client.json",
        "not found": site.metadata_url("missing.json"),
        "closed port": f"http://127.0.0.1:{free_port()}/client.json",
    }
    bodies = {
        "redirect": Document(b"", status=302, headers={"Location": "/client.json"}),
        "too large": Document(b'{"client_id": "' + b"x" * 6000 + b'"}'),
        "slow": Document(b"{}", delay=3),
        "not json": Document(b"<html></html>", headers={"Content-Type": "text/html"}),
        "invalid json": Document(b"{oops"),
    }
    fields = {
        "another client_id": {"client_id": "https://someone.else/client.json"},
        "no redirect_uris": {"redirect_uris": []},
        "no client_name": {"client_name": ""},
        "a secret": {"client_secret": "s3cret"},
        "a secret method": {"token_endpoint_auth_method": "client_secret_post"},
        "http redirect elsewhere": {"redirect_uris": ["http://example.com/cb"]},
    }
    if case == "slow":
        monkeypatch.setattr(client_metadata, "TIMEOUT", 0.5)
    if case in ("not https", "loopback by name", "mapped loopback address"):
        # As a server without the tests' setting: no http, no loopback address, ever.
        server.oauth.fetcher = client_metadata.ClientMetadataFetcher()
    if case == "not https":
        url = site.publish()
    elif case in urls:
        url = urls[case]
    elif case in bodies:
        url = site.metadata_url(f"{case.replace(' ', '-')}.json")
        site.documents[url.rsplit("/", 1)[1]] = bodies[case]
    else:
        name = f"{case.replace(' ', '-')}.json"
        url = site.publish(name, **fields[case])

    answer = await authorize_url(server, **params(client_site, server, client_id=url))

    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "invalid_client"
    assert says in answer.json()["error_description"]
    # Why a connection failed is the server's log's to say, not an unauthenticated caller's.
    for detail in ("refused", "Errno", "Timeout", "Stream"):
        assert detail not in answer.json()["error_description"]
    assert not server.file.exists()


@pytest.mark.parametrize(
    ("address", "allowed"),
    [
        ("8.8.8.8", True),
        ("2606:4700::1111", True),
        ("10.0.0.1", False),
        ("::ffff:10.0.0.1", False),  # IPv4-mapped
        ("64:ff9b::10.0.0.1", False),  # NAT64, well-known prefix
        ("64:ff9b::169.254.169.254", False),
        ("64:ff9b::8.8.8.8", True),  # an IPv6-only network's way to a public host
        ("64:ff9b:1::a00:1", False),  # NAT64, local-use prefix
        ("::ffff:0:10.0.0.1", False),  # SIIT
        ("::ffff:0:8.8.8.8", True),
        ("2002:a00:1::1", False),  # 6to4 of 10.0.0.1
        ("2002:a9fe:a9fe::1", False),  # 6to4 of 169.254.169.254
        ("2002:808:808::1", True),
        ("::10.0.0.1", False),  # IPv4-compatible
        ("::127.0.0.1", False),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", False),  # Teredo
        ("fec0::1", False),  # site-local
        ("::1", False),
        ("::", False),
        ("fe80::1%eth0", False),
        ("ff02::1", False),
    ],
)
def test_addresses_embedding_an_ipv4_one_are_checked_by_it(address: str, allowed: bool) -> None:
    assert client_metadata._address_allowed(address, allow_loopback=False) is allowed


async def test_a_client_metadata_document_is_fetched_once_while_fresh(
    server: Server, client_site: ClientSite, authorize: Any
) -> None:
    client_id = client_site.publish()
    await authorize(client_id)
    await authorize(client_id)

    assert client_site.fetched.count("client.json") == 1


# --- dynamic registration ----------------------------------------------------------------


async def register(server: Server, **metadata: Any) -> httpx2.Response:
    async with httpx2.AsyncClient() as http:
        return await http.post(server.endpoint("register"), json=metadata)


async def test_a_dynamic_registration_with_an_http_redirect_elsewhere_is_refused(
    server: Server,
) -> None:
    answer = await register(server, redirect_uris=["http://example.com/cb"], client_name="x")

    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_redirect_uri"
    assert not server.file.exists()


async def test_a_dynamic_registration_with_an_unknown_scope_is_refused(server: Server) -> None:
    answer = await register(
        server, redirect_uris=["https://app.example/cb"], client_name="x", scope="mcp root"
    )

    assert answer.status_code == 400
    assert answer.json()["error"] == "invalid_client_metadata"
    assert not server.file.exists()


async def test_a_confidential_client_needs_its_secret(
    server: Server, authorize: Any, client_site: ClientSite
) -> None:
    registered = (
        await register(server, redirect_uris=[client_site.callback_url], client_name="Conf")
    ).json()
    grant = await authorize(registered["client_id"])

    without = await exchange(server, grant)
    with_secret = await exchange(server, grant, client_secret=registered["client_secret"])

    assert registered["token_endpoint_auth_method"] == "client_secret_post"
    assert without.status_code == 401
    assert without.json()["error"] == "invalid_client"
    assert with_secret.status_code == 200


# --- revocation (RFC 7009) ---------------------------------------------------------------


async def revoke(server: Server, **form: str) -> httpx2.Response:
    async with httpx2.AsyncClient() as http:
        return await http.post(server.endpoint("revoke"), data=form)


async def test_a_public_client_revokes_with_its_client_id_alone(
    server: Server, authorize: Any
) -> None:
    grant = await authorize()
    tokens = (await exchange(server, grant)).json()

    answer = await revoke(server, token=tokens["refresh_token"], client_id=grant.client_id)

    assert answer.status_code == 200
    assert server.stored()["grants"] == {}


async def test_a_client_cannot_revoke_another_clients_token(
    server: Server, authorize: Any, client_site: ClientSite
) -> None:
    grant = await authorize()
    tokens = (await exchange(server, grant)).json()
    before = server.stored()

    answer = await revoke(
        server,
        token=tokens["access_token"],
        client_id=client_site.publish("other.json", client_name="Other"),
    )

    assert answer.status_code == 400
    assert answer.json()["error"] == "unauthorized_client"
    assert server.stored() == before


async def test_revoking_an_unknown_token_is_fine_and_changes_nothing(
    server: Server, authorize: Any
) -> None:
    grant = await authorize()
    await exchange(server, grant)
    before = server.stored()

    answer = await revoke(server, token="jmcp_at_unknown", client_id=grant.client_id)

    assert answer.status_code == 200
    assert server.stored() == before


# --- the consent page ------------------------------------------------------------------


async def test_the_user_denies_and_the_client_hears_access_denied(
    server: Server, authorize: Any
) -> None:
    answer = (await authorize(consent={"decision": "deny"})).query

    assert answer["error"] == "access_denied"
    assert answer["state"] == "the-state" and answer["iss"] == server.issuer
    assert not server.file.exists()


async def test_the_consent_page_needs_jupyters_login(
    server: Server, client_site: ClientSite
) -> None:
    first = await authorize_url(server, **params(client_site, server))
    async with httpx2.AsyncClient() as http:
        page = await http.get(first.headers["Location"])

    assert page.status_code == 302
    assert "/login?next=" in page.headers["Location"]


async def test_the_consent_page_cannot_be_framed_and_names_the_client(
    server: Server, client_site: ClientSite
) -> None:
    first = await authorize_url(server, **params(client_site, server))
    async with httpx2.AsyncClient() as http:
        page = await http.get(
            first.headers["Location"], headers={"Authorization": f"token {server.token}"}
        )

    assert page.status_code == 200
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    assert page.headers["X-Frame-Options"] == "DENY"
    assert f"form-action 'self' {client_site.url}" in page.headers["Content-Security-Policy"]
    assert "Test Connector" in page.text
    assert f"{client_site.url}/client.json" in page.text
    assert "Any\n  program running here could claim" in page.text  # the loopback warning


async def test_a_consent_post_without_the_pages_xsrf_token_is_refused(
    server: Server, client_site: ClientSite
) -> None:
    first = await authorize_url(server, **params(client_site, server))
    consent = first.headers["Location"]
    request_id = parse_qs(urlsplit(consent).query)["request"][0]
    async with httpx2.AsyncClient() as http:
        # A logged-in browser: the cookie a token login leaves...
        login = await http.get(f"{server.base}?token={server.token}")
        assert login.status_code in (200, 302)
        # ...and a post from another site, which has the cookie but not the page's token.
        answer = await http.post(
            consent.split("?")[0],
            data={"request": request_id, "decision": "allow"},
            headers={"Origin": "https://evil.example"},
        )

    assert answer.status_code in (403, 404)
    assert not server.file.exists()
    assert client_site._callbacks.empty()


async def test_an_unknown_or_expired_request_shows_why_on_the_consent_page(
    server: Server, client_site: ClientSite
) -> None:
    first = await authorize_url(server, **params(client_site, server))
    server.oauth.clock = lambda: time.time() + 601  # the request waited more than 10 minutes
    async with httpx2.AsyncClient() as http:
        page = await http.get(
            first.headers["Location"], headers={"Authorization": f"token {server.token}"}
        )

    assert page.status_code == 400
    assert "unknown or has expired" in page.text and "start again from the client" in page.text
    assert client_site._callbacks.empty()


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"scope": "mcp admin"}, "invalid_scope"),
        ({"code_challenge": None}, "invalid_request"),
        ({"resource": "https://other.example/mcp"}, "invalid_target"),
    ],
)
async def test_a_registered_client_cannot_make_the_server_an_open_redirector(
    server: Server, client_site: ClientSite, change: dict[str, str | None], error: str
) -> None:
    # Anyone may register a client whose redirect URI is any https site; a refused request
    # of it must not send a user who follows a link on the lab's domain there unawares.
    registered = await register(
        server, redirect_uris=["https://evil.example/landing"], client_name="Anything"
    )
    assert registered.status_code == 201, registered.text
    query = params(
        client_site,
        server,
        client_id=registered.json()["client_id"],
        redirect_uri="https://evil.example/landing",
        **change,
    )

    answer = await authorize_url(server, **query)

    back = refusal_query(answer)
    assert back["error"] == error and back["state"] == "s1"
    assert back["iss"] == server.issuer
    assert "evil.example" in answer.text  # the link names where it goes


# --- how long a grant lasts, and who may make one -----------------------------------------

DAY = 86400.0


async def test_refreshing_never_carries_a_grant_past_its_lifetime(
    server: Server, authorize: Any
) -> None:
    # A client refreshing every 29 days kept a grant forever (each refresh token lasts 30);
    # the grant now ends 90 days after the consent, however often it is refreshed.
    grant = await authorize()
    tokens = (await exchange(server, grant)).json()
    [record] = server.stored()["grants"].values()
    start = time.time()
    refreshed = []
    for days in (29, 58, 87):
        server.oauth.clock = lambda days=days: start + days * DAY
        answer = await token_request(
            server,
            grant_type="refresh_token",
            refresh_token=tokens["refresh_token"],
            client_id=grant.client_id,
        )
        assert answer.status_code == 200, (days, answer.text)
        tokens = answer.json()
        refreshed.append(server.stored()["grants"][record["id"]]["refresh_expires"])

    # Until then the refresh tokens last their 30 days; the last one ends with the grant.
    assert refreshed[0] == pytest.approx(start + 59 * DAY, abs=60)
    assert refreshed[-1] == pytest.approx(record["created"] + 90 * DAY, abs=1)
    server.oauth.clock = lambda: start + 91 * DAY
    late = await token_request(
        server,
        grant_type="refresh_token",
        refresh_token=tokens["refresh_token"],
        client_id=grant.client_id,
    )
    assert late.status_code == 400
    assert late.json()["error"] == "invalid_grant"


@pytest.fixture
def consent_page(server: Server, client_site: ClientSite) -> Any:
    """``await consent_page()``: the consent page's URL of a fresh authorization request."""

    async def _consent_page() -> str:
        answer = await authorize_url(server, **params(client_site, server))
        assert answer.status_code == 302, answer.text
        return str(answer.headers["Location"])

    return _consent_page


async def test_under_jupyterhub_only_the_servers_owner_may_allow(
    server: Server, consent_page: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Someone the server is shared with (or an admin) reaches it too; the client they allow
    # would act as alice. The test's Jupyter token user is not alice.
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    auth = {"Authorization": f"token {server.token}"}
    url = await consent_page()

    async with httpx2.AsyncClient() as http:
        page = await http.get(url, headers=auth)
        posted = await http.post(
            url.split("?")[0],
            content=urlencode(
                {"request": parse_qs(urlsplit(url).query)["request"][0], "decision": "allow"}
            ),
            headers={**auth, "Content-Type": "application/x-www-form-urlencoded"},
        )

    assert page.status_code == 403
    assert "Only alice, whose server this is" in html.unescape(page.text)
    assert posted.status_code == 403 and "Location" not in posted.headers
    assert server.stored().get("grants", {}) == {}


async def test_under_jupyterhub_only_the_servers_owner_may_revoke(
    server: Server, authorize: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    grant = await authorize()
    assert (await exchange(server, grant)).status_code == 200
    [grant_id] = server.stored()["grants"]
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    auth = {"Authorization": f"token {server.token}"}  # not alice

    async with httpx2.AsyncClient() as http:
        refused = await http.delete(f"{server.endpoint('grants')}/{grant_id}", headers=auth)
        kept = list(server.stored()["grants"])
        monkeypatch.delenv("JUPYTERHUB_USER")  # a server of one's own: its user revokes
        revoked = await http.delete(f"{server.endpoint('grants')}/{grant_id}", headers=auth)

    assert refused.status_code == 403 and "Only alice" in refused.text
    assert kept == [grant_id]
    assert revoked.status_code == 204
    assert server.stored()["grants"] == {}


async def test_the_setting_lets_others_allow_under_jupyterhub(
    server: Server, authorize: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    server.oauth.settings = dataclasses.replace(server.oauth.settings, consent_by_others=True)

    grant = await authorize()

    assert (await exchange(server, grant)).status_code == 200


# --- registrations cannot grow the grants file ----------------------------------------------


async def test_a_thousand_registrations_leave_the_grants_file_as_it_was(
    server: Server, client_site: ClientSite
) -> None:
    # Registration needs no login and any web page may send one: registered clients are
    # kept in memory (the newest, a bounded number) and written with their first grant.
    from jupyter_mcp.auth import provider

    async with httpx2.AsyncClient() as http:
        for n in range(1000):
            answer = await http.post(
                server.endpoint("register"),
                json={
                    "redirect_uris": [client_site.callback_url],
                    "client_name": f"client {n} " + "x" * 2000,
                },
            )
            assert answer.status_code == 201, answer.text
    last = answer.json()["client_id"]

    assert not server.file.exists()
    assert len(server.oauth._ungranted) <= provider.MAX_UNGRANTED_CLIENTS
    # The newest is still known: its authorization request goes on to the consent page.
    answer = await authorize_url(server, **params(client_site, server, client_id=last))
    assert answer.status_code == 302 and "/mcp/oauth/consent?" in answer.headers["Location"]
    assert not server.file.exists()


async def test_a_registered_client_is_written_with_its_first_grant(
    server: Server, client_site: ClientSite, authorize: Any
) -> None:
    registered = await register(
        server,
        redirect_uris=[client_site.callback_url],
        client_name="Registered",
        token_endpoint_auth_method="none",
    )
    client_id = registered.json()["client_id"]
    assert not server.file.exists()

    grant = await authorize(client_id)
    assert (await exchange(server, grant)).status_code == 200

    stored = server.stored()
    assert list(stored["clients"]) == [client_id]
    assert stored["clients"][client_id]["client_name"] == "Registered"
    assert client_id not in server.oauth._ungranted


@pytest.mark.parametrize(
    ("body", "headers", "says"),
    [
        (
            json.dumps({"redirect_uris": ["https://app.example/cb"], "client_name": "x"}),
            {"Content-Type": "text/plain"},
            "application/json, not text/plain",
        ),
        (
            json.dumps(
                {
                    "redirect_uris": [f"https://app.example/{n}" for n in range(11)],
                    "client_name": "x",
                }
            ),
            {"Content-Type": "application/json"},
            "10 redirect URIs at most",
        ),
        (
            json.dumps({"redirect_uris": ["https://app.example/cb"], "client_name": "x" * 5000}),
            {"Content-Type": "application/json"},
            "at most 4096 are kept",
        ),
    ],
    ids=["text/plain", "11 redirect URIs", "5 KiB"],
)
async def test_an_unacceptable_registration_is_refused(
    server: Server, body: str, headers: dict[str, str], says: str
) -> None:
    async with httpx2.AsyncClient() as http:
        answer = await http.post(server.endpoint("register"), content=body, headers=headers)

    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == "invalid_client_metadata"
    assert says in answer.json()["error_description"]
    assert server.oauth._ungranted == {}
    assert not server.file.exists()
