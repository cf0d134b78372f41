"""The configuration of the test servers, shared by conftest and the tests that build their own.

jupyter-collaboration's server extensions enable themselves once installed (the collab
extra); a test server keeps them off unless its test asks for the shared document. A module of
its own, not conftest: two conftest modules (tests/ and tests/hub/) would shadow each other
under the one import name ``conftest``.
"""

from __future__ import annotations

from typing import Any

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
