"""The configuration of the test servers, shared by conftest and the tests that build their own.

jupyter-collaboration's server extensions enable themselves once installed (the collab
extra); a test server keeps them off unless its test asks for the shared document. A module of
its own, not conftest: two conftest modules (tests/ and tests/hub/) would shadow each other
under the one import name ``conftest``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

COLLABORATION_EXTENSIONS = ("jupyter_server_ydoc", "jupyter_collaboration", "jupyter_server_fileid")


def collaboration_installed() -> bool:
    """Whether jupyter-collaboration (its server extension) can be imported."""
    import importlib.util

    return importlib.util.find_spec("jupyter_server_ydoc") is not None


def server_config(*, collaboration: bool = False, store: Any = None) -> dict[str, Any]:
    """Jupyter with jupyter_mcp enabled, no unauthenticated access and, unless asked for,
    no real-time collaboration. With ``collaboration``, documents are saved 50 ms after a
    change and the collaboration store lives in ``store`` (a folder)."""
    extensions = {"jupyter_mcp": True}
    extensions.update({name: False for name in COLLABORATION_EXTENSIONS})
    if collaboration:  # jupyter_collaboration itself is only a package of the others now
        extensions.update(jupyter_server_ydoc=True, jupyter_server_fileid=True)
    config: dict[str, Any] = {
        "ServerApp": {
            "jpserver_extensions": extensions,
            "allow_unauthenticated_access": False,
        }
    }
    if collaboration:
        config["YDocExtension"] = {"document_save_delay": 0.05, "file_poll_interval": 0.2}
        config["SQLiteYStore"] = {"db_path": str(store / "ystore.db")}
        config["BaseFileIdManager"] = {"db_path": str(store / "file_id_manager.db")}
    return config


@pytest.fixture(autouse=True)
def no_kernels_left(jp_serverapp: Any, jp_asyncio_loop: Any) -> Iterator[None]:
    """End every session (and kernel) a test left on its in-process server; a conftest that
    imports this fixture applies it to every test of its folder."""
    yield

    async def end_sessions() -> None:
        for session in await jp_serverapp.session_manager.list_sessions():
            await jp_serverapp.session_manager.delete_session(session["id"])

    jp_asyncio_loop.run_until_complete(end_sessions())
