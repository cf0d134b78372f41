"""The extension in JupyterHub single-user servers, behind a real hub and its proxy.

One hub for the module (``hub`` in conftest.py): alice's and bob's servers run the extension at
``/user/<name>/``; an agent holds a hub API token of alice's scoped ``access:servers!user=alice``.
Standard MCP (official SDK client), seed and proxy REST, the stdio bridge and the JupyterLab
window link are checked under the hub's auth, then alice's server is restarted by the hub and
the clients are checked again. The restart comes last: the tests run in file order.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shlex
import sys
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import hub_server
import pytest
from chromium import CHROMIUM, CHROMIUM_ARGS, require_chromium, skip_or_fail
from hub_server import PASSWORD, Hub, request, wait_for
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_lists import list_all
from mcp_messages import initialize

from jupyter_mcp.cli.launcher import relay_launcher

MODES = ["legacy", "auto"]
# What bob's server answers a token that is not his: which token it takes instead.
BOBS_REFUSAL = (
    "Forbidden: no credential this server accepts; send 'Authorization: token <token>' with a "
    "JupyterHub token of bob's (scope access:servers!user=bob, from the hub's Token page)"
)
ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"


@pytest.fixture(autouse=True)
def jp_asyncio_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A private loop per test: no in-process server here, and the browser tests' Playwright
    must not find pytest-jupyter's loop running."""
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture(autouse=True)
def jp_server_cleanup() -> None:
    """No in-process ServerApp to clean up: the hub and its servers are subprocesses."""


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (but Jupyter's own state) with a digest of its content."""
    files = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_file() and relative.parts[0] not in (".jupyter", ".local", ".cache"):
            files[str(relative)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


@asynccontextmanager
async def mcp_client(url: str, token: str | None, mode: str) -> AsyncIterator[Client]:
    """The official SDK client on ``url`` (Streamable HTTP) with a hub token."""
    headers = {"Authorization": f"token {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


def leaves(error: BaseException) -> list[BaseException]:
    """The errors inside (nested) exception groups, as the SDK's task groups raise them."""
    inner = getattr(error, "exceptions", None)  # an ExceptionGroup (its backport on 3.10)
    if isinstance(inner, tuple):
        return [leaf for exception in inner for leaf in leaves(exception)]
    return [error]


def relay_params(*args: str) -> StdioServerParameters:
    """The stdio bridge (this environment's command line program) with ``args``."""
    command = relay_launcher()
    # The SDK starts the program with a minimal environment: keep this checkout first.
    env = {"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else None
    return StdioServerParameters(command=command[0], args=[*command[1:], *args], env=env)


# --- standard MCP ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_mcp_with_alices_token_lists_and_calls_tools_on_her_files(
    hub: Hub, mode: str
) -> None:
    home = hub.home("alice")
    (home / "notes.md").write_text("# alice's notes\n")
    url = f"{hub.server_url('alice')}mcp"

    async with mcp_client(url, hub.tokens["alice"], mode) as client:
        tools = await list_all(client)
        read = await client.call_tool("get_file_text_by_path", {"pathInProject": "notes.md"})
        made = await client.call_tool(
            "create_new_file_with_text",
            {"pathInProject": f"agent/{mode}.txt", "text": f"written over {mode}\n"},
        )
        protocol = client.protocol_version

    assert protocol == ERAS[mode]
    listed = request(f"{hub.server_url('alice')}mcp/list_tools", token=hub.tokens["alice"])
    assert [tool.name for tool in tools] == [tool["name"] for tool in listed.json()]
    assert {"get_file_text_by_path", "create_new_file_with_text"} <= {t.name for t in tools}
    assert read.is_error is False
    assert "# alice's notes" in read.content[0].text
    assert made.is_error is False, made.content
    assert (home / "agent" / f"{mode}.txt").read_text() == f"written over {mode}\n"


async def test_alices_token_is_refused_on_bobs_server(hub: Hub) -> None:
    bob = hub.home("bob")
    (bob / "secret.txt").write_text("bob's secret\n")
    before = snapshot(bob)
    token = hub.tokens["alice"]
    base = hub.server_url("bob")
    accept = {"Accept": "application/json, text/event-stream"}
    answers = [
        request(
            f"{base}mcp", method="POST", token=token, body=initialize(client="test"), headers=accept
        ),
        request(
            f"{base}mcp/get_file_text_by_path",
            method="POST",
            token=token,
            body={"pathInProject": "secret.txt"},
        ),
        request(
            f"{base}api/mcp/create_new_file_with_text",
            method="POST",
            token=token,
            body={"pathInProject": "planted.txt", "text": "x"},
        ),
        request(f"{base}mcp/list_tools", token=token),
    ]
    with pytest.raises(Exception) as refused:
        async with mcp_client(f"{base}mcp", token, "auto") as client:
            await client.call_tool("get_file_text_by_path", {"pathInProject": "secret.txt"})

    assert [answer.status for answer in answers] == [403, 403, 403, 403]
    assert all(b"secret" not in answer.body for answer in answers)
    assert answers[1].json() == {"status": None, "error": BOBS_REFUSAL}
    assert [str(e) for e in leaves(refused.value)] == [BOBS_REFUSAL]
    assert snapshot(bob) == before


async def test_no_token_is_refused(hub: Hub) -> None:
    home = hub.home("alice")
    before = snapshot(home)
    base = hub.server_url("alice")
    accept = {"Accept": "application/json, text/event-stream"}
    answers = {
        "mcp": request(f"{base}mcp", method="POST", body={"jsonrpc": "2.0"}, headers=accept),
        "seed": request(
            f"{base}mcp/create_new_file_with_text",
            method="POST",
            body={"pathInProject": "planted.txt", "text": "x"},
        ),
        "proxy": request(f"{base}api/mcp/list_tools"),
        "wrong token": request(f"{base}mcp/list_tools", token="not-a-hub-token"),
    }

    statuses = {name: answer.status for name, answer in answers.items()}
    # /mcp answers a request with no credential with the OAuth challenge, under the prefix.
    assert statuses == {**dict.fromkeys(answers, 403), "mcp": 401}
    assert {k.lower(): v for k, v in answers["mcp"].headers.items()}["www-authenticate"] == (
        f'Bearer resource_metadata="{base}.well-known/oauth-protected-resource/mcp", scope="mcp"'
    )
    # A cookie-less POST fails the XSRF check before auth even runs: refused all the same.
    assert answers["seed"].json()["status"] is None and answers["seed"].json()["error"]
    assert answers["mcp"].json()["error"]["code"] == -32600
    assert snapshot(home) == before


def test_the_admins_policy_binds_bobs_server(hub: Hub) -> None:
    bob = hub.home("bob")
    token = hub.new_token("bob", ["access:servers!user=bob"], note="bob's agent")
    base = hub.server_url("bob")
    (bob / "mine.txt").write_text("bob's own\n")

    listed = request(f"{base}mcp/list_tools", token=token)
    read = request(
        f"{base}mcp/get_file_text_by_path",
        method="POST",
        token=token,
        body={"pathInProject": "mine.txt"},
    )
    written = request(
        f"{base}mcp/create_new_file_with_text",
        method="POST",
        token=token,
        body={"pathInProject": "policy.txt", "text": "x"},
    )

    # His own token gets in (unlike alice's) ...
    assert listed.status == read.status == written.status == 200
    assert read.json()["status"]["content"] == "bob's own\n"
    # ... and c.JupyterMCP.read_only from the admin's config for his server holds.
    names = {tool["name"] for tool in listed.json()}
    assert "get_file_text_by_path" in names and "create_new_file_with_text" not in names
    assert written.json()["status"] is None and written.json()["error"]
    assert not (bob / "policy.txt").exists()


# --- seed and proxy REST --------------------------------------------------------------------


def test_seed_and_proxy_rest_under_the_user_prefix(hub: Hub) -> None:
    home = hub.home("alice")
    (home / "rest.txt").write_text("over REST\n")
    token = hub.tokens["alice"]
    base = hub.server_url("alice")

    status = request(f"{base}mcp/status", token=token)
    seed_list = request(f"{base}mcp/list_tools", token=token)
    proxy_list = request(f"{base}api/mcp/list_tools", token=token)
    seed_read = request(
        f"{base}mcp/get_file_text_by_path",
        method="POST",
        token=token,
        body={"pathInProject": "rest.txt"},
    )
    proxy_write = request(
        f"{base}api/mcp/create_new_file_with_text",
        method="POST",
        token=token,
        body={"pathInProject": "rest/made.txt", "text": "made over proxy REST\n"},
    )

    # Behind the hub's proxy the Host check is the hub's, but a foreign Origin is still refused.
    foreign = request(
        f"{base}mcp/create_new_file_with_text",
        method="POST",
        token=token,
        body={"pathInProject": "rest/foreign.txt", "text": "x"},
        headers={"Origin": "http://evil.example"},
    )

    assert status.status == 200
    assert foreign.status == 403 and "Origin" in foreign.json()["error"]
    assert not (home / "rest" / "foreign.txt").exists()
    assert seed_list.status == proxy_list.status == 200
    assert seed_list.body == proxy_list.body
    assert "get_file_text_by_path" in [tool["name"] for tool in seed_list.json()]
    assert seed_read.status == 200
    assert seed_read.json()["status"]["content"] == "over REST\n"
    assert proxy_write.status == 200 and proxy_write.json()["error"] is None
    assert (home / "rest" / "made.txt").read_text() == "made over proxy REST\n"


# --- the stdio bridge -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_the_stdio_bridge_relays_both_eras_to_the_hub(
    hub: Hub, mode: str, tmp_path: Path
) -> None:
    (hub.home("alice") / "bridge.txt").write_text(f"bridged {mode}\n")
    params = relay_params("stdio", "--url", hub.server_url("alice"), "--token", hub.tokens["alice"])

    with open(tmp_path / "bridge.log", "w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
            tools = await list_all(client)
            found = await client.call_tool("get_file_text_by_path", {"pathInProject": "bridge.txt"})
            protocol = client.protocol_version

    assert protocol == ERAS[mode]
    assert "get_file_text_by_path" in {tool.name for tool in tools}
    assert found.is_error is False
    assert f"bridged {mode}" in found.content[0].text


async def test_the_stdio_bridge_with_alices_token_cannot_reach_bob(
    hub: Hub, tmp_path: Path
) -> None:
    params = relay_params("stdio", "--url", hub.server_url("bob"), "--token", hub.tokens["alice"])

    with open(tmp_path / "bridge.log", "w+") as errlog:
        with pytest.raises(Exception) as refused:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
                await client.list_tools()

    assert [str(e) for e in leaves(refused.value)] == [BOBS_REFUSAL]


# --- configuration, from inside alice's server ----------------------------------------------


def test_config_inside_alices_server_explains_the_hub_token(hub: Hub) -> None:
    command = shlex.join([*relay_launcher(), "config"])
    ran = seed(hub, "run_command_on_background", command=command, timeout=120000)
    own = seed(hub, "run_command_on_background", command="printenv JUPYTERHUB_API_TOKEN")
    out = ran["stdout"]

    assert ran["exitCode"] == 0, ran
    assert own["stdout"].strip()  # the hub did give the server a token of its own ...
    assert own["stdout"].strip() not in out  # ... and config keeps it in
    assert hub.tokens["alice"] not in out
    assert f"open {hub.url}hub/token" in out
    assert "access:servers!user=alice" in out
    assert f"--server-url {hub.url}user/alice/mcp" in out
    assert f"stdio --url {hub.url}user/alice/" in out


def test_a_notebook_in_alices_server_finds_it_with_load_ext(hub: Hub) -> None:
    """%load_ext jupyter_mcp in a kernel of a single-user server: the server's runtime file
    has no token there (the hub authenticates), and the server's own hub token is used."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext jupyter_mcp"),
        nbformat.v4.new_code_cell(
            "names = [f['name'] for f in ide.list_files_in_folder(pathInProject='/')]\n"
            "print('loaded.ipynb' in names)"
        ),
    ]
    (hub.home("alice") / "loaded.ipynb").write_text(nbformat.writes(nb))
    try:
        run = seed(hub, "execute_notebook_cells", pathInProject="loaded.ipynb", timeoutMs=180000)
    finally:
        seed(hub, "kernel_action", action="shutdown", pathInProject="loaded.ipynb")
        (hub.home("alice") / "loaded.ipynb").unlink()
    texts = ["".join(o["text"] for o in cell["outputs"]) for cell in run["cells"]]
    assert run["status"] == "ok", run
    assert "(the server that started this kernel)" in texts[0]
    assert "connected to http://127.0.0.1:" in texts[0] and "/user/alice/" in texts[0]
    assert texts[1].strip() == "True"


# --- OAuth: remote clients sign in through the hub ------------------------------------------


class HubUser:
    """alice at a browser: logs in at the hub's form when asked, allows on the consent page."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.pages: list[str] = []

    async def open(self, authorize_url: str) -> None:
        page = self.page
        await page.goto(authorize_url)
        if "/hub/login" in page.url:
            self.pages.append(page.url)
            await page.fill("#username_input", "alice")
            await page.fill("#password_input", PASSWORD)
            await page.click("#login_submit")
        await page.wait_for_selector("#allow", timeout=90000)
        self.pages.append(await page.inner_text("main"))
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "hub-oauth-consent.png"))
        await page.click("#allow")
        await page.wait_for_url("**/callback?**", timeout=90000)


@pytest.mark.browser
@pytest.mark.parametrize("registration", ["metadata document", "dynamic"])
async def test_an_oauth_client_signs_in_through_the_hub_and_uses_alices_tools(
    hub: Hub, registration: str
) -> None:
    from oauth_client import ClientSite, MemoryTokens, chromium_page, sdk_oauth

    home = hub.home("alice")
    (home / "oauth-notes.md").write_text("alice's notes for the connector\n")
    url = f"{hub.server_url('alice')}mcp"
    site = ClientSite()
    storage = MemoryTokens()
    try:
        async with chromium_page() as page:
            alice = HubUser(page)
            document = site.publish() if registration == "metadata document" else None
            provider = sdk_oauth(url, site, alice.open, metadata_document=document, storage=storage)
            async with httpx2.AsyncClient(auth=provider, timeout=90) as http:
                transport = streamable_http_client(url, http_client=http)
                async with Client(transport, mode="auto") as client:
                    read = await client.call_tool(
                        "get_file_text_by_path", {"pathInProject": "oauth-notes.md"}
                    )
    finally:
        site.close()
    assert storage.tokens is not None
    bearer = storage.tokens.access_token
    contents = request(
        f"{hub.server_url('alice')}api/contents",
        headers={"Authorization": f"Bearer {bearer}"},
    )
    at_bob = request(
        f"{hub.server_url('bob')}mcp",
        method="POST",
        body={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {bearer}", "Accept": "application/json"},
    )

    login, consent = alice.pages
    assert f"{hub.url}hub/login" in login  # the hub's own login, through its OAuth
    assert "Test Connector wants to use the tools of this Jupyter server" in consent
    assert f"{url}, as alice" in consent
    assert read.is_error is False and "notes for the connector" in read.content[0].text
    # The token is good for alice's /mcp and nothing else of hers, or of anyone's.
    assert contents.status == 403
    assert at_bob.status == 401
    challenge = {k.lower(): v for k, v in at_bob.headers.items()}["www-authenticate"]
    assert "unknown here, or was revoked" in challenge


# (Before the lab window's tests: their sync Playwright page, kept for the module, runs an
# event loop in this thread until the module ends, and an async test after it cannot run.)
async def test_only_alice_can_allow_clients_on_her_server_shared_with_bob(hub: Hub) -> None:
    # bob reaches alice's server through a share (as an admin with access:servers would);
    # a client he allowed there would act as alice for as long as it refreshes.
    from oauth_client import ClientSite, pkce

    shared = hub.api("shares/alice/", method="POST", body={"user": "bob"})
    assert shared.status in (200, 201), shared
    bobs = hub.new_token("bob", ["access:servers!server=alice/"], note="bob, shared with")
    base = hub.server_url("alice")
    site = ClientSite()
    try:
        async with httpx2.AsyncClient(timeout=90) as http:
            registered = await http.post(
                f"{base}mcp/oauth/register",
                json={
                    "client_name": "Bob's Connector",
                    "redirect_uris": [site.callback_url],
                    "token_endpoint_auth_method": "none",
                },
            )
            assert registered.status_code == 201, registered.text
            _, challenge = pkce()
            query = {
                "response_type": "code",
                "client_id": registered.json()["client_id"],
                "redirect_uri": site.callback_url,
                "state": "shared",
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            }
            first = await http.get(f"{base}mcp/oauth/authorize", params=query)
            assert first.status_code == 302, first.text
            consent = first.headers["Location"]
            as_bob = await http.get(consent, headers={"Authorization": f"token {bobs}"})
            as_alice = await http.get(
                consent, headers={"Authorization": f"token {hub.tokens['alice']}"}
            )
    finally:
        site.close()
        hub.api("shares/alice/", method="DELETE")

    assert as_bob.status_code == 403, (as_bob.status_code, as_bob.text[:300])
    assert "Only alice, whose server this is, can allow clients" in as_bob.text
    assert as_alice.status_code == 200  # the owner sees the consent page


# --- the JupyterLab window link -------------------------------------------------------------


def seed(hub: Hub, tool: str, **arguments: Any) -> Any:
    """One seed REST call on alice's server with her token: the call's ``status``."""
    answer = request(
        f"{hub.server_url('alice')}mcp/{tool}",
        method="POST",
        token=hub.tokens["alice"],
        body=arguments,
    )
    assert answer.status == 200, answer
    assert answer.json()["error"] is None, answer.json()["error"]
    return answer.json()["status"]


def link_online(page: Any) -> bool:
    status = page.locator(".jp-MCP-status")
    return status.count() > 0 and "MCP: offline" not in status.inner_text()


def labextension_served() -> bool:
    """The built labextension, where the single-user servers of this environment load it."""
    built = REPO / "jupyter_mcp" / "labextension" / "package.json"
    link = Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "jupyter-mcp"
    return built.exists() and (link / "package.json").exists()


@pytest.fixture(scope="module")
def lab_page(hub: Hub) -> Iterator[Any]:
    """alice's JupyterLab in headless Chromium, logged in through the hub's login form."""
    require_chromium()
    if not labextension_served():
        skip_or_fail("the labextension is not built/linked (make labextension; make test does it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.sockets = []  # type: ignore[attr-defined]
        page.on("websocket", lambda socket: page.sockets.append(socket.url))  # type: ignore[attr-defined]
        page.goto(f"{hub.url}hub/login")
        page.fill("#username_input", "alice")
        page.fill("#password_input", PASSWORD)
        page.click("#login_submit")
        page.wait_for_url("**/user/alice/lab**", timeout=90000)
        page.wait_for_selector(".jp-MCP-status", timeout=90000)
        wait_for(lambda: link_online(page), 60, "the window link to connect")
        yield page
        browser.close()


@pytest.mark.browser
def test_the_lab_window_links_with_the_hub_cookie(hub: Hub, lab_page: Any) -> None:
    home = hub.home("alice")
    (home / "open" / "hello.py").parent.mkdir(exist_ok=True)
    (home / "open" / "hello.py").write_text("print('hello from alice')\n")

    assert seed(hub, "open_file_in_editor", pathInProject="open/hello.py") == "file is opened"
    path = wait_for(
        lambda: seed(hub, "get_open_in_editor_file_path") == str(home / "open" / "hello.py"),
        30,
        "hello.py to be alice's active editor",
    )
    text = seed(hub, "get_open_in_editor_file_text")
    ARTIFACTS.mkdir(exist_ok=True)
    lab_page.screenshot(path=str(ARTIFACTS / "hub-lab-window.png"))

    assert path
    assert text == "print('hello from alice')\n"
    bridges = [url for url in lab_page.sockets if "/mcp/bridge" in url]
    assert bridges and all(
        url.startswith(f"ws{hub.url[4:]}user/alice/mcp/bridge?") for url in bridges
    )
    # No token in the page: the socket was let in by the hub's cookie alone.
    assert all("token=" not in url for url in bridges)


# --- after a restart ------------------------------------------------------------------------


def in_thread(coroutine: Any) -> Any:
    """Run a coroutine on a loop of its own (Playwright's sync API owns this thread's)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def oauth_access_token(hub: Hub) -> str:
    """An OAuth access token of alice's server (the consent answered with her hub token)."""
    from oauth_client import ClientSite, grant_by_hand

    site = ClientSite()
    try:
        tokens = await grant_by_hand(hub.server_url("alice"), hub.tokens["alice"], site)
    finally:
        site.close()
    return str(tokens["access_token"])


def test_clients_reconnect_after_the_hub_restarts_alices_server(
    hub: Hub, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    try:  # the window is checked too where a browser is at hand (opened before the restart)
        lab_page = request.getfixturevalue("lab_page")
    except pytest.skip.Exception:
        lab_page = None
    home = hub.home("alice")
    (home / "again.txt").write_text("after the restart\n")
    url = f"{hub.server_url('alice')}mcp"
    before = hub.user_model("alice")["servers"][""]["url"]

    def restart() -> None:
        hub.stop_server("alice")
        hub.start_server("alice")
        hub.wait_ready("alice")

    async def bridges_across_restart() -> dict[str, list[Any]]:
        """A bridge process per protocol era living through one restart: calls before, after."""
        params = relay_params(
            "stdio", "--url", hub.server_url("alice"), "--token", hub.tokens["alice"]
        )
        read = ("get_file_text_by_path", {"pathInProject": "again.txt"})
        answers: dict[str, list[Any]] = {}
        async with AsyncExitStack() as stack:
            clients = {}
            for mode in MODES:
                errlog = stack.enter_context(open(tmp_path / f"bridge-{mode}.log", "w+"))
                transport = stdio_client(params, errlog=errlog)
                clients[mode] = await stack.enter_async_context(Client(transport, mode=mode))
                answers[mode] = [await clients[mode].call_tool(*read)]
            await asyncio.to_thread(restart)
            for mode, client in clients.items():
                answers[mode].append(await client.call_tool(*read))
        return answers

    async def fresh_clients() -> list[Any]:
        answers = []
        for mode in MODES:
            async with mcp_client(url, hub.tokens["alice"], mode) as client:
                answers.append(
                    await client.call_tool("get_file_text_by_path", {"pathInProject": "again.txt"})
                )
        return answers

    oauth_token = in_thread(oauth_access_token(hub))  # a grant made before the restart
    bridged = in_thread(bridges_across_restart())
    after = hub.user_model("alice")["servers"][""]["url"]
    fresh = in_thread(fresh_clients())
    with_grant = hub_server.request(
        url,
        method="POST",
        body={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={
            "Authorization": f"Bearer {oauth_token}",
            "Accept": "application/json",
            "MCP-Protocol-Version": "2025-11-25",
        },
    )

    assert before == after == "/user/alice/"
    # The respawned server (a new port) is the same server for its grants: /user/alice/.
    assert with_grant.status != 401, with_grant
    for mode in MODES:
        assert [r.is_error for r in bridged[mode]] == [False, False], bridged[mode]
        assert all("after the restart" in r.content[0].text for r in bridged[mode])
    assert [r.is_error for r in fresh] == [False, False]

    if lab_page is None:
        return  # no browser here: the token clients above are what this machine can check
    # The window: the hub gives every spawn a new cookie secret, so the cookie this window
    # logged in with is void and its link, like JupyterLab's own requests, gets 403 until the
    # page is loaded again (JupyterLab's hub extension may offer that in a dialog), which goes
    # through the hub's OAuth without a new login.
    wait_for(lambda: not link_online(lab_page), 30, "the window to see its server go")
    ARTIFACTS.mkdir(exist_ok=True)
    lab_page.screenshot(path=str(ARTIFACTS / "hub-lab-after-restart.png"))
    lab_page.reload()
    lab_page.wait_for_url("**/user/alice/lab**", timeout=90000)
    lab_page.wait_for_selector(".jp-MCP-status", timeout=90000)
    wait_for(lambda: link_online(lab_page), 60, "the window link to reconnect")
    assert seed(hub, "open_file_in_editor", pathInProject="again.txt") == "file is opened"
    wait_for(
        lambda: seed(hub, "get_open_in_editor_file_path") == str(home / "again.txt"),
        30,
        "again.txt to be the active editor after the restart",
    )
