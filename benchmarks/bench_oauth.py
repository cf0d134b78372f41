"""What an OAuth access token costs a call on ``/mcp``, next to Jupyter's own token.

Starts a real ``jupyter server`` with jupyter_mcp on a temporary folder, makes one OAuth grant
the way a client does (Dynamic Client Registration, the authorization request with PKCE, the
consent page answered with the Jupyter token, the code exchanged), then from one run prints
p50/p99 of ``tools/call get_file_text_by_path`` in a legacy session over plain httpx
(``bench_mcp``'s :class:`RawSession`) with each credential, call for call in turn so that the
machine's load falls on both alike. The OAuth check is a digest, a dictionary lookup and a
``stat`` of the grants file per request. Target: the OAuth p50 within 1.1x the token's.

    .venv/bin/python benchmarks/bench_oauth.py [--calls 300] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import re
import secrets
import sys
import tempfile
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2

sys.path.insert(0, str(Path(__file__).parent))
from _server import jupyter_server  # noqa: E402
from bench_mcp import RawSession, percentile, timed  # noqa: E402

REDIRECT = "http://127.0.0.1:9/callback"  # never reached: the code is read off the redirect


async def oauth_token(base: str, token: str) -> str:
    """One grant, as a client makes it (the user's consent given with the server's token)."""
    jupyter = {"Authorization": f"token {token}"}
    async with httpx2.AsyncClient(timeout=60) as http:
        registered = await http.post(
            f"{base}/mcp/oauth/register",
            json={
                "client_name": "bench_oauth",
                "redirect_uris": [REDIRECT],
                "token_endpoint_auth_method": "none",
            },
        )
        client_id = registered.json()["client_id"]
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        query = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": REDIRECT,
            "state": "bench",
            "code_challenge": challenge.decode().rstrip("="),
            "code_challenge_method": "S256",
        }
        consent = (await http.get(f"{base}/mcp/oauth/authorize?{urlencode(query)}")).headers[
            "Location"
        ]
        request_id = parse_qs(urlsplit(consent).query)["request"][0]
        page = (await http.get(consent, headers=jupyter)).text
        # Allowed as offered: every tool set the page shows ticked.
        form = [("request", request_id), ("decision", "allow")] + [
            ("toolset", name) for name in re.findall(r'name="toolset" value="(\w+)" checked', page)
        ]
        answer = await http.post(
            consent.split("?")[0],
            content=urlencode(form),
            headers={**jupyter, "Content-Type": "application/x-www-form-urlencoded"},
        )
        code = parse_qs(urlsplit(answer.headers["Location"]).query)["code"][0]
        tokens = await http.post(
            f"{base}/mcp/oauth/token",
            data={
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": REDIRECT,
                "client_id": client_id,
                "code_verifier": verifier,
            },
        )
        return str(tokens.json()["access_token"])


async def run(base: str, token: str, name: str, calls: int, rounds: int) -> None:
    bearer = await oauth_token(base, token)
    credentials = {
        "Jupyter token (Authorization: token)": f"token {token}",
        "OAuth access token (Authorization: Bearer)": f"Bearer {bearer}",
    }
    samples: dict[str, list[float]] = {label: [] for label in credentials}
    async with contextlib.AsyncExitStack() as stack:
        sessions = {}
        for label, header in credentials.items():
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers={"Authorization": header})
            )
            sessions[label] = await stack.enter_async_context(RawSession(http, base, "bench"))
        for session in sessions.values():
            for _ in range(20):  # warm-up, not timed
                await session.call_tool("get_file_text_by_path", {"pathInProject": name})
        for _ in range(rounds):
            # Call for call in turn, so that the machine's load falls on both alike.
            for _ in range(calls):
                for label, session in sessions.items():

                    async def call(session: RawSession = session) -> None:
                        await session.call_tool("get_file_text_by_path", {"pathInProject": name})

                    samples[label] += await timed(call, 1, warmup=0)
    print(f"tools/call get_file_text_by_path, legacy session, {rounds} x {calls} calls each")
    reference = percentile(samples[next(iter(samples))], 0.5)
    for label, values in samples.items():
        p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
        print(f"  {label:<44} p50 {p50:6.2f} ms  p99 {p99:6.2f} ms  ({p50 / reference:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "root"
        root.mkdir()
        (root / "notes.md").write_text("# notes\n" * 50)
        data = Path(folder) / "data"
        with jupyter_server(root, env={"JUPYTER_DATA_DIR": str(data)}) as server:
            asyncio.run(run(server.url, server.token, "notes.md", args.calls, args.rounds))


if __name__ == "__main__":
    main()
