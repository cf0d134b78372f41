"""The resource tests: notebooks in their files or in shared documents, no kernel left behind
(``BOTH_BACKENDS``, see ``tests/live_documents.py``)."""

from __future__ import annotations

from live_documents import (  # noqa: F401 - fixtures of this folder
    _no_kernels_left,
    _saves_finished,
    collaboration,
    jp_server_config,
    parametrize_backends,
)

pytest_generate_tests = parametrize_backends
