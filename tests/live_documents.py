"""Where a notebook lives in a test server: its file, or jupyter-collaboration's shared document.

A test module that sets ``BOTH_BACKENDS = True`` runs every test twice, once with the notebook
in its file and once with jupyter-collaboration enabled (where the server's shared document is
changed and saved to the file shortly after). The ``conftest`` of a test folder that wants this
imports the fixtures and the hook from here (a module of its own, uniquely named, since two
conftest modules shadow each other under one import name). Also: no kernel left behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_configs import collaboration_installed, server_config


def parametrize_backends(metafunc: pytest.Metafunc) -> None:
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


def scratch_server_config(
    collaboration: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """The test server's config, its collaboration store in ``tmp_path/collaboration``."""
    store = tmp_path / "collaboration"
    store.mkdir()
    # A document room the server opens itself keeps its store in the working directory
    # whatever the configuration says (jupyter_server_ydoc 3.0): keep it out of the checkout.
    monkeypatch.chdir(store)
    return server_config(collaboration=collaboration, store=store)


@pytest.fixture
def jp_server_config(
    collaboration: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    return scratch_server_config(collaboration, tmp_path, monkeypatch)


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
    if collaboration:
        jp_asyncio_loop.run_until_complete(collaboration_saves_done())


async def collaboration_saves_done() -> None:
    """Wait until jupyter-collaboration has no save under way (30 s at most)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while pending := [
        task
        for task in asyncio.all_tasks()
        if getattr(task.get_coro(), "__qualname__", "") in COLLABORATION_SAVES
    ]:
        assert loop.time() < deadline, f"collaboration saves still run: {pending}"
        await asyncio.wait(pending, timeout=1)
