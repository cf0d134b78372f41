"""The server's kernel machinery (jupyter_mcp.kernels.managers): a kernel being started."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jupyter_client.multikernelmanager import MultiKernelManager


async def test_the_status_answers_while_a_kernel_is_being_listed_for_the_first_time(
    mcp_app: Any, jp_fetch: Any, jp_serverapp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the moment jupyter_client lists a kernel it started, before jupyter_server's own
    # start goes on (a turn of the event loop, where a busy server answers other requests)
    manager = jp_serverapp.kernel_manager
    answered: list[Any] = []
    listed = MultiKernelManager._add_kernel_when_ready

    async def then_list(self: Any, kernel_id: str, kernel: Any, started: Any) -> None:
        await listed(self, kernel_id, kernel, started)
        try:
            answered.append([k["id"] for k in self.list_kernels()])
        except Exception as e:  # what GET /api/status answered with HTTP 500
            answered.append(e)

    monkeypatch.setattr(MultiKernelManager, "_add_kernel_when_ready", then_list)
    # When a kernel starts
    started = json.loads((await jp_fetch("api", "kernels", method="POST", body="{}")).body)
    try:
        # Then the kernels are listed at that moment too, the new one with them
        assert answered == [[started["id"]]]
        status = json.loads((await jp_fetch("api", "status")).body)
        assert status["kernels"] == 1
    finally:
        await manager.shutdown_kernel(started["id"], now=True)
