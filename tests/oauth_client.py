"""The client side of the OAuth tests: what a real MCP client brings, on loopback.

- :class:`ClientSite`: a small Tornado app on 127.0.0.1 that serves the client's Client ID
  Metadata Documents (and broken ones, for the refusals) and receives the authorization
  response at ``/callback``, as a native client's loopback listener does;
- :func:`sdk_oauth`: the official SDK's ``OAuthClientProvider`` for a server, registering by
  metadata document or dynamically, with tokens kept in memory;
- :func:`consent_with_token`: answers the consent page with the Jupyter token instead of a
  browser (for the tests of refusals, which need codes but not a person);
- :func:`grant_by_hand`: a whole grant without a browser (register, consent, exchange);
- :func:`chromium_page`: a page of a headless Chromium on the test's own loop;
- PKCE and form helpers for driving the endpoints by hand.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import re
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2
from local_servers import free_port
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from tornado import web
from tornado.httpserver import HTTPServer


@dataclass
class Document:
    """What the client site answers at one path."""

    body: bytes
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    delay: float = 0.0


class ClientSite:
    """The client's own web presence on loopback: metadata documents and the callback."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.callback_url = f"{self.url}/callback"
        self.documents: dict[str, Document] = {}
        self.fetched: list[str] = []
        self._callbacks: asyncio.Queue[dict[str, str]] = asyncio.Queue()
        site = self

        class DocumentHandler(web.RequestHandler):
            async def get(self, path: str) -> None:
                site.fetched.append(path)
                document = site.documents.get(path)
                if document is None:
                    raise web.HTTPError(404)
                if document.delay:
                    await asyncio.sleep(document.delay)
                self.set_status(document.status)
                for name, value in document.headers.items():
                    self.set_header(name, value)
                self.finish(document.body)

        class CallbackHandler(web.RequestHandler):
            def get(self) -> None:
                site._callbacks.put_nowait(
                    {k: v[-1] for k, v in parse_qs(self.request.query).items()}
                )
                self.finish("<p id='done'>You can close this window.</p>")

        app = web.Application([(r"/callback", CallbackHandler), (r"/(.+)", DocumentHandler)])
        self._server = HTTPServer(app)
        self._server.listen(self.port, "127.0.0.1")

    def metadata_url(self, name: str = "client.json") -> str:
        return f"{self.url}/{name}"

    def publish(self, name: str = "client.json", **overrides: Any) -> str:
        """Serve a valid metadata document (with ``overrides``); its URL, the client_id."""
        url = self.metadata_url(name)
        document = {
            "client_id": url,
            "client_name": "Test Connector",
            "client_uri": self.url,
            "redirect_uris": [self.callback_url],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }
        document.update(overrides)
        self.documents[name] = Document(json.dumps(document).encode())
        return url

    async def next_callback(self, timeout: float = 120) -> dict[str, str]:
        """The query of the next authorization response that reached ``/callback``."""
        return await asyncio.wait_for(self._callbacks.get(), timeout)

    def close(self) -> None:
        self._server.stop()


class MemoryTokens:
    """The SDK's ``TokenStorage``, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def sdk_oauth(
    server_url: str,
    site: ClientSite,
    open_browser: Callable[[str], Awaitable[None]],
    *,
    metadata_document: str | None = None,
    storage: MemoryTokens | None = None,
    scope: str | None = None,
) -> OAuthClientProvider:
    """The SDK's OAuth client for the MCP endpoint ``server_url``.

    ``open_browser`` gets the authorization URL (a person, Playwright, or
    :func:`consent_with_token`); the answer comes back to the site's ``/callback``.
    ``metadata_document``: register by this Client ID Metadata Document URL rather than
    dynamically (the SDK only takes https URLs there; the test server allows http on
    loopback, so the URL is given to the SDK after its constructor's check).
    """
    metadata = OAuthClientMetadata(
        client_name="Test Connector",
        redirect_uris=[site.callback_url],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope=scope,
    )

    async def callback() -> AuthorizationCodeResult:
        answer = await site.next_callback()
        if "error" in answer:
            raise RuntimeError(f"authorization refused: {answer}")
        return AuthorizationCodeResult(
            code=answer["code"], state=answer.get("state"), iss=answer.get("iss")
        )

    provider = OAuthClientProvider(
        server_url,
        metadata,
        storage or MemoryTokens(),
        redirect_handler=open_browser,
        callback_handler=callback,
        client_metadata_url="https://client.invalid/client.json" if metadata_document else None,
    )
    if metadata_document:
        provider.context.client_metadata_url = metadata_document
    return provider


async def consent_with_token(
    authorize_url: str,
    jupyter_token: str,
    *,
    decision: str = "allow",
    read_only: bool = False,
    toolsets: list[str] | None = None,
    follow_to_client: bool = True,
) -> httpx2.Response:
    """Go from the authorization URL to the client, answering the consent page with the
    server's token (token requests need no XSRF). The last response (the redirect to the
    client, once followed when ``follow_to_client``)."""
    auth = {"Authorization": f"token {jupyter_token}"}
    async with httpx2.AsyncClient(timeout=30) as http:
        first = await http.get(authorize_url)
        assert first.status_code == 302, (first.status_code, first.text)
        consent_url = first.headers["Location"]
        if "/mcp/oauth/consent" not in consent_url:
            return first  # an error sent back to the client
        page = await http.get(consent_url, headers=auth)
        assert page.status_code == 200, page.text
        offered = re.findall(r'name="toolset" value="([a-z]+)" checked', page.text)
        form: list[tuple[str, str]] = [
            ("request", parse_qs(urlsplit(consent_url).query)["request"][0]),
            ("decision", decision),
        ]
        if read_only:
            form.append(("read_only", "on"))
        form += [("toolset", name) for name in (offered if toolsets is None else toolsets)]
        answer = await http.post(
            consent_url.split("?")[0],
            content=urlencode(form),
            headers={**auth, "Content-Type": "application/x-www-form-urlencoded"},
        )
        if answer.status_code != 302 or not follow_to_client:
            return answer
        return await http.get(answer.headers["Location"])


def pkce() -> tuple[str, str]:
    """A PKCE verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge.decode().rstrip("=")


async def grant_by_hand(
    base_url: str,
    jupyter_token: str,
    site: ClientSite,
    *,
    client_id: str | None = None,
    client_name: str = "Test Connector",
    scope: str | None = None,
) -> dict[str, Any]:
    """A whole grant of the server at ``base_url`` without a browser: the client registers
    itself (unless ``client_id`` is given: a metadata document URL), the consent page is
    answered with ``jupyter_token`` (or a hub token), the code is exchanged. The token answer."""
    async with httpx2.AsyncClient(timeout=90) as http:
        if client_id is None:
            registered = await http.post(
                f"{base_url}mcp/oauth/register",
                json={
                    "client_name": client_name,
                    "redirect_uris": [site.callback_url],
                    "token_endpoint_auth_method": "none",
                },
            )
            assert registered.status_code == 201, registered.text
            client_id = str(registered.json()["client_id"])
        verifier, challenge = pkce()
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": site.callback_url,
            "state": "by-hand",
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            **({"scope": scope} if scope else {}),
        }
        await consent_with_token(f"{base_url}mcp/oauth/authorize?{urlencode(query)}", jupyter_token)
        code = (await site.next_callback())["code"]
        answer = await http.post(
            f"{base_url}mcp/oauth/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": site.callback_url,
                "client_id": client_id,
                "code_verifier": verifier,
            },
        )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@asynccontextmanager
async def chromium_page() -> AsyncIterator[Any]:
    """A page of a headless Chromium of its own, on the running loop (Playwright's async API:
    the test's loop may run the server too). Skipped without Chromium, failed in CI
    (``JUPYTER_MCP_REQUIRE_BROWSER``)."""
    import pytest

    if not os.path.exists(CHROMIUM):
        if os.environ.get("JUPYTER_MCP_REQUIRE_BROWSER"):
            pytest.fail(f"browser tests required but {CHROMIUM} is missing")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium, or make test)")
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield await browser.new_page()
        finally:
            await browser.close()
