"""Debian's Chromium for the browser tests: where it is, how it is started, and what a test
does when it cannot run (skip, or fail where CI requires the browser tests)."""

from __future__ import annotations

import os

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def skip_or_fail(reason: str) -> None:
    """Skip the test for ``reason``; fail it when CI sets JUPYTER_MCP_REQUIRE_BROWSER, since
    there a missing browser is a broken set-up, not a skip."""
    if os.environ.get("JUPYTER_MCP_REQUIRE_BROWSER"):
        pytest.fail(f"browser tests required but cannot run: {reason}")
    pytest.skip(reason)


def require_chromium() -> None:
    """Skip (or fail, see :func:`skip_or_fail`) when Chromium is not installed."""
    if not os.path.exists(CHROMIUM):
        skip_or_fail(f"{CHROMIUM} is missing (apt-get install chromium, or make test)")
