"""The whole flow as a user lives it: an MCP client, a browser, Jupyter's login, the consent page.

The official SDK's OAuth client connects to a real server's ``/mcp``, is answered 401, finds the
authorization server, registers (by Client ID Metadata Document, or dynamically) and opens the
authorization URL; headless Chromium (Playwright, Debian's ``/usr/bin/chromium``) lands on
Jupyter's login page, logs in with the token, sees the consent page and clicks; the client gets
its tokens at its loopback callback and calls tools with them. Screenshots of the consent page
go to ``test-artifacts/``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from oauth_client import ClientSite, MemoryTokens, chromium_page, sdk_oauth
from oauth_fixtures import Server

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


class Person:
    """The user at the browser: logs in to Jupyter when asked, then answers the consent page."""

    def __init__(self, page: Any, token: str, *, read_only: bool = False, allow: bool = True):
        self.page = page
        self.token = token
        self.read_only = read_only
        self.allow = allow
        self.consents: list[str] = []

    async def open(self, authorize_url: str) -> None:
        """The client's ``redirect_handler``: the browser goes to the authorization URL."""
        page = self.page
        await page.goto(authorize_url)
        if "/login" in page.url:
            await page.fill("#password_input", self.token)
            await page.click("#login_submit")
        await page.wait_for_selector("#allow", timeout=60000)
        self.consents.append(await page.inner_text("main"))
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "oauth-consent.png"))
        if self.read_only:
            await page.check("#read-only")
        await page.click("#allow" if self.allow else "#deny")
        await page.wait_for_url("**/callback?**", timeout=60000)


@asynccontextmanager
async def connected(url: str, provider: Any, mode: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(auth=provider, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


@pytest.mark.parametrize(
    ("registration", "mode"), [("metadata document", "auto"), ("dynamic", "legacy")]
)
async def test_a_client_signs_in_through_jupyters_login_and_calls_tools(
    server: Server, client_site: ClientSite, jp_root_dir: Any, registration: str, mode: str
) -> None:
    (jp_root_dir / "notes.md").write_text("# notes\n")
    document = client_site.publish() if registration == "metadata document" else None
    storage = MemoryTokens()

    async with chromium_page() as page:
        person = Person(page, server.token)
        provider = sdk_oauth(
            server.mcp, client_site, person.open, metadata_document=document, storage=storage
        )
        async with connected(server.mcp, provider, mode) as client:
            read = await client.call_tool("get_file_text_by_path", {"pathInProject": "notes.md"})
            made = await client.call_tool(
                "create_new_file_with_text", {"pathInProject": "agent.txt", "text": "from oauth\n"}
            )

    [consent] = person.consents
    [grant] = server.oauth.grants()
    assert "Test Connector wants to use the tools of this Jupyter server" in consent
    if document:
        assert f"described by {document}" in consent
        assert grant.registration == "metadata" and grant.client_id == document
    else:
        assert "registered itself with this server" in consent
        assert grant.registration == "dynamic"
    assert read.is_error is False and "# notes" in read.content[0].text
    assert made.is_error is False and (jp_root_dir / "agent.txt").read_text() == "from oauth\n"
    assert storage.tokens is not None and storage.tokens.access_token.startswith("jmcp_at_")
    assert grant.scopes == ["mcp"] and grant.client_name == "Test Connector"


async def test_the_user_ticks_read_only_and_the_client_can_only_read(
    server: Server, client_site: ClientSite, jp_root_dir: Any
) -> None:
    (jp_root_dir / "notes.md").write_text("kept\n")

    async with chromium_page() as page:
        person = Person(page, server.token, read_only=True)
        provider = sdk_oauth(
            server.mcp, client_site, person.open, metadata_document=client_site.publish()
        )
        async with connected(server.mcp, provider, "auto") as client:
            listed = {t.name for t in (await client.list_tools(cache_mode="refresh")).tools}
            write = await client.call_tool(
                "rewrite_file_content", {"pathInProject": "notes.md", "text": "changed\n"}
            )

    assert "rewrite_file_content" not in listed and "get_file_text_by_path" in listed
    assert write.is_error is True and "read-only" in write.content[0].text
    assert (jp_root_dir / "notes.md").read_text() == "kept\n"
    [grant] = server.oauth.grants()
    assert grant.scopes == ["mcp", "mcp:read"]


async def test_the_user_denies_and_the_client_gets_nothing(
    server: Server, client_site: ClientSite
) -> None:
    async with chromium_page() as page:
        person = Person(page, server.token, allow=False)
        provider = sdk_oauth(
            server.mcp, client_site, person.open, metadata_document=client_site.publish()
        )
        with pytest.raises(Exception) as refused:
            async with connected(server.mcp, provider, "auto") as client:
                await client.list_tools()

    assert "access_denied" in "".join(str(e) for e in leaves(refused.value))
    assert server.oauth.grants() == []
    assert not server.file.exists()


async def test_the_sdk_client_refreshes_an_expired_token_by_itself(
    server: Server, client_site: ClientSite
) -> None:
    storage = MemoryTokens()
    async with chromium_page() as page:
        person = Person(page, server.token)
        provider = sdk_oauth(
            server.mcp,
            client_site,
            person.open,
            metadata_document=client_site.publish(),
            storage=storage,
        )
        async with connected(server.mcp, provider, "auto") as client:
            await client.list_tools()
        first = storage.tokens
        assert first is not None
        # An hour later, for the client: it refreshes before its next request, no person.
        provider.context.token_expiry_time = time.time() - 1
        async with connected(server.mcp, provider, "auto") as client:
            answer = await client.call_tool("get_project_modules", {})

    assert answer.is_error is False
    assert len(person.consents) == 1
    assert storage.tokens is not None
    assert storage.tokens.refresh_token != first.refresh_token
    assert storage.tokens.access_token != first.access_token


def leaves(error: BaseException) -> list[BaseException]:
    """The errors inside (nested) exception groups, as the SDK's task groups raise them."""
    inner = getattr(error, "exceptions", None)
    if isinstance(inner, tuple):
        return [leaf for exception in inner for leaf in leaves(exception)]
    return [error]


async def test_allow_works_only_while_the_consent_page_is_in_front(
    server: Server, client_site: ClientSite
) -> None:
    # Double-clickjacking: a page swaps the consent page in (or uncovers it) between the two
    # clicks of a double-click. Allow is held while the page is not in front, and for a
    # moment after it comes back; the page's strict CSP still lets its own script run.
    from urllib.parse import urlencode

    from oauth_client import pkce

    _, challenge = pkce()
    query = {
        "response_type": "code",
        "client_id": client_site.publish(),
        "redirect_uri": client_site.callback_url,
        "state": "s",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    violations: list[str] = []
    async with chromium_page() as page:
        page.on(
            "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
        )
        await page.goto(f"{server.endpoint('authorize')}?{urlencode(query)}")
        if "/login" in page.url:
            await page.fill("#password_input", server.token)
            await page.click("#login_submit")
        await page.wait_for_selector("#allow", timeout=60000)
        # In front: Allow comes to work.
        await page.wait_for_selector("#allow:enabled", timeout=30000)
        # Another window takes the focus: held at once.
        held = await page.evaluate(
            "() => { window.dispatchEvent(new Event('blur'));"
            " return document.getElementById('allow').disabled; }"
        )
        # Back in front: it works again, after a moment.
        again = await page.evaluate(
            "() => { window.dispatchEvent(new Event('focus'));"
            " return document.getElementById('allow').disabled; }"
        )
        await page.wait_for_selector("#allow:enabled", timeout=30000)
        await page.click("#allow")
        await page.wait_for_url("**/callback?**", timeout=60000)

    assert held is True
    assert again is True  # not at the instant it comes back
    assert violations == []
    assert "code" in await client_site.next_callback(timeout=30)
