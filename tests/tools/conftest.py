"""What the notebook, kernel and debugger tool tests share.

An official SDK client of the test server (``connect``), no kernel left behind by a test, and
the two places a notebook can live: a module that sets ``BOTH_BACKENDS = True`` runs every test
twice, once with the notebook in its file and once with jupyter-collaboration enabled (where
the server's shared document is changed and saved to the file shortly after).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from server_configs import collaboration_installed, server_config


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if getattr(metafunc.module, "BOTH_BACKENDS", False) and "collaboration" in (
        metafunc.fixturenames
    ):
        metafunc.parametrize(
            "collaboration",
            [
                False,
                pytest.param(
                    True,
                    marks=pytest.mark.skipif(
                        not collaboration_installed(),
                        reason="jupyter-collaboration is not installed",
                    ),
                ),
            ],
            ids=["file", "collaboration"],
        )


@pytest.fixture
def collaboration() -> bool:
    """Whether the test server has jupyter-collaboration enabled (see BOTH_BACKENDS)."""
    return False


@pytest.fixture
def jp_server_config(
    collaboration: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    store = tmp_path / "collaboration"
    store.mkdir()
    # A document room the server opens itself keeps its store in the working directory
    # whatever the configuration says (jupyter_server_ydoc 3.0): keep it out of the checkout.
    monkeypatch.chdir(store)
    return server_config(collaboration=collaboration, store=store)


@pytest.fixture
def connect(
    http_server: Any, http_server_port: tuple[Any, int], jp_base_url: str, jp_serverapp: Any
):  # type: ignore[no-untyped-def]
    """``async with connect() as client``: a legacy-era SDK client of the test server's /mcp."""
    url = f"http://127.0.0.1:{http_server_port[1]}{jp_base_url}mcp"
    token = jp_serverapp.identity_provider.token

    @asynccontextmanager
    async def _connect() -> AsyncIterator[Client]:
        # As MCP clients do, a tool call may take minutes before it answers (httpx's own
        # default gives up on a silent answer after 5 s).
        timeout = httpx2.Timeout(30.0, read=300.0)
        headers = {"Authorization": f"token {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=timeout) as http:
            async with Client(
                streamable_http_client(url, http_client=http), mode="legacy"
            ) as client:
                yield client

    return _connect


#: The coroutines of jupyter-collaboration that write a shared document to its file.
COLLABORATION_SAVES = ("DocumentRoom._maybe_save_document", "FileLoader._save_content")


@pytest.fixture(autouse=True)
def _no_kernels_left(no_kernels_left: None) -> None:
    """Every test here ends the kernel sessions it left (tests/conftest.py)."""


@pytest.fixture(autouse=True)
def _saves_finished(collaboration: bool, jp_serverapp: Any, jp_asyncio_loop: Any) -> Iterator[None]:
    """Let jupyter-collaboration finish saving what a test changed before the server stops.

    A shared document is saved shortly after it changes, by a shielded task whose file write
    runs in an AnyIO worker thread. A test that ends within that delay would close the event
    loop under the save: the file is left unsaved and the worker thread waits forever, so the
    test process never exits (tests/conftest.py's pytest_sessionfinish names such threads).
    """
    yield
    if not collaboration:
        return

    async def saves() -> None:
        deadline = jp_asyncio_loop.time() + 30
        while pending := [
            task
            for task in asyncio.all_tasks()
            if getattr(task.get_coro(), "__qualname__", "") in COLLABORATION_SAVES
        ]:
            assert jp_asyncio_loop.time() < deadline, f"collaboration saves still run: {pending}"
            await asyncio.wait(pending, timeout=1)

    jp_asyncio_loop.run_until_complete(saves())
