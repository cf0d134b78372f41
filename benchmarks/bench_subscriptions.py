"""How soon a subscribed agent hears of a change: the user's typing in JupyterLab, a file
written on disk; beside an MCP ping's round trip on the same client (the transport's floor)
and the target (within a second).

One Jupyter server (JupyterLab and jupyter_mcp; with ``--collaboration``, jupyter-collaboration
too), one headless Chromium showing a notebook, and an official SDK client (legacy session)
subscribed to one of its cells and to a file. Each round types one key into the cell (no save)
and times the notification, then writes the file and times that one; rounds are 0.6 s apart,
past the half-second interval of one URI's notifications. The machine is shared and busy:
figures are under load.

    .venv/bin/python benchmarks/bench_subscriptions.py [--rounds 40] [--collaboration]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import nbformat

sys.path.insert(0, str(Path(__file__).parent))
from _server import jupyter_server, percentiles  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
#: jupyter-collaboration's server and lab extensions (installed, they enable themselves).
COLLABORATION = ("jupyter_server_ydoc", "jupyter_collaboration", "jupyter_server_fileid")
COLLABORATION_LAB_EXTENSIONS = (
    "@jupyter/collaboration-extension",
    "@jupyter/docprovider-extension",
)


class Agent:
    """An SDK client in a thread of its own, subscribed to ``uris``; it keeps when each
    notification arrived, and measures pings on request."""

    def __init__(self, url: str, token: str, uris: list[str]) -> None:
        self.url, self.token, self.uris = url, token, uris
        self.heard: list[tuple[float, str]] = []
        self.ready = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.client: Any = None
        self.stop: asyncio.Event | None = None
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self.thread.start()
        if not self.ready.wait(60):
            raise RuntimeError("the agent did not connect")

    async def _run(self) -> None:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared.exceptions import MCPDeprecationWarning

        self.loop, self.stop = asyncio.get_running_loop(), asyncio.Event()

        async def on_message(message: Any) -> None:
            if getattr(message, "method", None) == "notifications/resources/updated":
                self.heard.append((time.perf_counter(), str(message.params.uri)))

        timeout = httpx2.Timeout(30.0, read=300.0)
        headers = {"Authorization": f"token {self.token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
            transport = streamable_http_client(f"{self.url}/mcp", http_client=http)
            async with Client(transport, mode="legacy", message_handler=on_message) as client:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    for uri in self.uris:
                        await client.subscribe_resource(uri)
                self.client = client
                await asyncio.sleep(0.5)  # the session's event stream opens
                self.ready.set()
                await self.stop.wait()

    def ping(self) -> float:
        """One ping's round trip, in seconds."""
        assert self.loop is not None

        async def once() -> float:
            from mcp.shared.exceptions import MCPDeprecationWarning

            started = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await self.client.send_ping()
            return time.perf_counter() - started

        return asyncio.run_coroutine_threadsafe(once(), self.loop).result(30)

    def wait(self, uri: str, after: float, timeout: float = 10.0) -> float:
        """Seconds from ``after`` to the first notification of ``uri`` since then."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            found = [at for at, u in list(self.heard) if u == uri and at >= after]
            if found:
                return found[0] - after
            time.sleep(0.002)
        raise RuntimeError(f"no notification of {uri} within {timeout} s")

    def close(self) -> None:
        if self.loop is not None and self.stop is not None:
            self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--collaboration", action="store_true")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
        nb.cells = [nbformat.v4.new_code_cell("x = 1")]
        (root / "typed.ipynb").write_text(nbformat.writes(nb))
        (root / "written.txt").write_text("0\n")
        extensions = {name: args.collaboration for name in COLLABORATION}
        extensions["jupyter_collaboration"] = False  # only a package of the other two now
        extra: list[str] = []
        if not args.collaboration:
            # Its lab extensions off too (the page would wait for shared documents).
            labconfig = root / ".config" / "labconfig"
            labconfig.mkdir(parents=True)
            disabled = {name: True for name in COLLABORATION_LAB_EXTENSIONS}
            (labconfig / "page_config.json").write_text(
                json.dumps({"disabledExtensions": disabled})
            )
            os.environ["JUPYTER_CONFIG_DIR"] = str(root / ".config")
        if args.collaboration:
            extra += [
                f"--SQLiteYStore.db_path={root / '.ystore.db'}",
                f"--BaseFileIdManager.db_path={root / '.fileid.db'}",
            ]
        with (
            jupyter_server(root, *extra, extensions=extensions) as server,
            sync_playwright() as playwright,
        ):
            conn = server.connection()
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page()
            page.goto(f"{server.url}/lab?token={server.token}")
            page.wait_for_selector(".jp-MCP-status", timeout=90000)
            time.sleep(1)
            server.call(conn, "open_file_in_editor", pathInProject="typed.ipynb")
            editor = page.locator(".jp-NotebookPanel:visible .jp-CodeCell .cm-content").first
            editor.wait_for(timeout=60000)
            cell_id = server.call(conn, "get_notebook_cells", pathInProject="typed.ipynb")
            cell = f"jupyter-mcp://notebook/typed.ipynb/cell/{cell_id['cells'][0]['cellId']}"
            written = "jupyter-mcp://file/written.txt"
            agent = Agent(server.url, server.token, [cell, written])
            editor.click()
            page.keyboard.press("End")
            typing: list[float] = []
            disk: list[float] = []
            pings: list[float] = []
            try:
                for n in range(args.rounds + 3):
                    started = time.perf_counter()
                    page.keyboard.type("1")
                    typed = agent.wait(cell, started)
                    time.sleep(0.6)
                    started = time.perf_counter()
                    (root / "written.txt").write_text(f"{n + 1}\n")
                    on_disk = agent.wait(written, started)
                    ping = agent.ping()
                    time.sleep(0.6)
                    if n >= 3:  # warm-up
                        typing.append(typed)
                        disk.append(on_disk)
                        pings.append(ping)
            finally:
                agent.close()
                browser.close()
    mode = "jupyter-collaboration" if args.collaboration else "window link, no collaboration"
    print(f"JupyterLab with {mode}; {args.rounds} rounds")
    print(f"{'from':<46} {'p50 ms':>8} {'p99 ms':>8}")
    for label, samples in (
        ("a keystroke in a cell to the notification", typing),
        ("a file written on disk to the notification", disk),
        ("reference: an MCP ping's round trip", pings),
    ):
        p50, p99 = percentiles(samples)
        print(f"{label:<46} {p50:>8.1f} {p99:>8.1f}")
    print(f"{'target: within a second':<46} {1000.0:>8.1f} {1000.0:>8.1f}")


if __name__ == "__main__":
    main()
