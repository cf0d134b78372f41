"""The kernel layer against real ipykernel kernels of a real Jupyter server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_mcp.core.errors import ToolError
from jupyter_mcp.kernels.execute import KernelDied, execute, kernel_name_for
from jupyter_mcp.kernels.managers import connected_client


async def _alive(manager: Any, kernel_id: str) -> bool:
    return kernel_id in manager and bool(await manager.get_kernel(kernel_id).is_alive())


async def test_execute_hands_over_each_message_and_returns_the_reply(jp_serverapp: Any) -> None:
    manager = jp_serverapp.kernel_manager
    kernel_id = await manager.start_kernel()
    try:
        seen: list[tuple[str, Any]] = []
        async with connected_client(jp_serverapp, kernel_id) as client:
            reply = await execute(
                client,
                "print('hello')\nimport sys; print('oops', file=sys.stderr)\n6 * 7",
                on_message=lambda kind, content: seen.append((kind, content)),
                is_alive=lambda: _alive(manager, kernel_id),
                user_expressions={"answer": "6 * 7"},
            )
        kinds = [kind for kind, _ in seen]
        streams = {c["name"]: c["text"] for kind, c in seen if kind == "stream"}
        assert streams == {"stdout": "hello\n", "stderr": "oops\n"}
        assert [c["data"]["text/plain"] for k, c in seen if k == "execute_result"] == ["42"]
        assert "status" not in kinds  # status messages only pace the loop
        assert reply["content"]["status"] == "ok"
        assert reply["content"]["user_expressions"]["answer"]["data"]["text/plain"] == "42"
    finally:
        await manager.shutdown_kernel(kernel_id, now=True)


async def test_a_kernel_that_dies_mid_cell_raises_kernel_died(jp_serverapp: Any) -> None:
    manager = jp_serverapp.kernel_manager
    kernel_id = await manager.start_kernel()
    try:
        async with connected_client(jp_serverapp, kernel_id) as client:
            with pytest.raises(KernelDied):
                await execute(
                    client,
                    "import os; os._exit(1)",
                    on_message=lambda kind, content: None,
                    is_alive=lambda: _alive(manager, kernel_id),
                )
    finally:
        if kernel_id in manager:
            await manager.shutdown_kernel(kernel_id, now=True)


def test_kernel_name_for_follows_the_notebook_or_picks_python(
    jp_serverapp: Any, tmp_path: Path
) -> None:
    manager = jp_serverapp.kernel_manager
    specs = manager.kernel_spec_manager.get_all_specs()
    assert "python3" in specs
    asks_python = tmp_path / "a.ipynb"
    asks_python.write_text(json.dumps({"metadata": {"kernelspec": {"name": "python3"}}}))
    asks_unknown = tmp_path / "b.ipynb"
    asks_unknown.write_text(json.dumps({"metadata": {"kernelspec": {"name": "no-such-kernel"}}}))
    broken = tmp_path / "c.ipynb"
    broken.write_text("{not json")
    names_none = tmp_path / "d.ipynb"
    names_none.write_text(json.dumps({"metadata": {}}))
    other_python = tmp_path / "e.ipynb"
    other_python.write_text(
        json.dumps({"metadata": {"kernelspec": {"name": "conda-py", "language": "python"}}})
    )
    default = manager.default_kernel_name
    assert kernel_name_for(asks_python, specs, default) == "python3"
    # No kernel named, or an unreadable notebook (its tool says why): the server's default;
    # another machine's Python kernelspec: the server's Python kernel, as JupyterLab matches.
    assert kernel_name_for(names_none, specs, default) is None
    assert kernel_name_for(broken, specs, default) is None
    assert kernel_name_for(other_python, specs, default) is None
    # A kernel the server does not have is an error naming it, never the default.
    with pytest.raises(ToolError, match=r"b\.ipynb asks for the kernel 'no-such-kernel'"):
        kernel_name_for(asks_unknown, specs, default)
