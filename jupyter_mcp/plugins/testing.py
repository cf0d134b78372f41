"""Call a plugin's tools in pytest, without a server.

::

    from jupyter_mcp.testing import PluginHarness

    def test_find_notes(tmp_path):
        (tmp_path / "notes").mkdir()
        (tmp_path / "notes" / "a.md").write_text("buy milk\\n")
        harness = PluginHarness("example.notes", root_dir=tmp_path)
        assert "buy milk" in harness.call("find_notes", {"text": "milk"})

The harness loads the plugin the way the server does (by entry point name, or from the object
itself), refuses invalid declarations with the same reasons, and runs each call through the
server's registry: schema validation, the 1 MiB argument and 4 MiB result limits, the time
budget, approval of destructive tools, read-only mode.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.context import Settings, ToolContext
from ..core.errors import ToolError
from ..core.registry import Registry, Tool
from ..services import build_services
from .host import Plugin, PluginError, discover, load_entry_point, registered_name

__all__ = ["PluginHarness", "ToolError"]

Approver = Callable[[str, dict[str, Any]], bool]


class PluginHarness:
    """One plugin, loaded as the server loads it, with its tools callable directly.

    ``plugin`` is an entry point name of the group ``jupyter_mcp.tools`` (the plugin id) or
    the plugin object itself (then ``plugin_id`` names it). ``approve`` answers approval
    requests of destructive tools: None means no JupyterLab window (the call fails), a bool
    always answers that, a function ``(tool, arguments) -> bool`` decides per call. With
    ``strict`` (the default) a refused declaration raises :class:`PluginError`.
    """

    def __init__(
        self,
        plugin: Any,
        *,
        root_dir: str | Path,
        plugin_id: str | None = None,
        timeout: float = Settings.plugin_timeout,
        read_only: bool = False,
        approve: bool | Approver | None = None,
        contents_manager: Any = None,
        strict: bool = True,
    ) -> None:
        if isinstance(plugin, str):
            matches = [ep for ep in discover() if ep.name == plugin]
            if not matches:
                raise PluginError(f"No entry point {plugin!r} in the group jupyter_mcp.tools")
            self.plugin: Plugin = load_entry_point(matches[0])
        else:
            self.plugin = Plugin(plugin_id or _default_id(plugin), plugin)
        if strict and self.plugin.refused:
            reasons = "; ".join(f"{k}: {v}" for k, v in self.plugin.refused.items())
            raise PluginError(f"Plugin {self.plugin.id} has invalid declarations: {reasons}")
        self.registry = Registry()
        names = [tool.name for tool in self.plugin.tools]
        for tool in self.plugin.tools:
            if names.count(tool.name) == 1:
                self.registry.add(tool)
        self.context = ToolContext(
            root_dir=Path(root_dir),
            settings=Settings(plugin_timeout=timeout, read_only=read_only),
            log=logging.getLogger(f"jupyter_mcp.testing.{self.plugin.id}"),
        )
        if contents_manager is None:
            from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

            contents_manager = AsyncLargeFileManager(root_dir=str(self.context.root_dir))
        self.contents_manager = contents_manager
        self.approvals: list[tuple[str, dict[str, Any]]] = []
        self.context.services = build_services(
            self.context,
            contents_manager=contents_manager,
            approver=self._approver(approve) if approve is not None else None,
        )

    @property
    def refused(self) -> dict[str, str]:
        """Refused declarations: tool name (or ``#position``) → reason."""
        return dict(self.plugin.refused)

    @property
    def tools(self) -> list[str]:
        """The registered names of the tools a client would see now."""
        return [tool.name for tool in self.registry.visible(self.context)]

    def listing(self) -> list[dict[str, Any]]:
        """The ``list_tools`` entries of the plugin's tools, as the server lists them."""
        return self.registry.listing(self.context)

    def tool(self, name: str) -> Tool:
        """The registry's :class:`Tool` for a local or registered name."""
        return self.registry.get(self._name(name), self.context)

    def call(self, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> str:
        """Call a tool (local or registered name) and return its text; ToolError on failure.

        For async tests use :meth:`acall`.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.acall(name, arguments, **kwargs))
        raise RuntimeError("PluginHarness.call inside an event loop: use 'await harness.acall()'")

    async def acall(self, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> str:
        """The coroutine form of :meth:`call`."""
        merged = {**(arguments or {}), **kwargs}
        result = await self.registry.call(self._name(name), merged, self.context)
        return result.value

    def _name(self, name: str) -> str:
        if "__" in name:
            return name
        return registered_name(self.plugin.id, name)

    def _approver(self, approve: bool | Approver) -> Any:
        async def approver(tool: Tool, arguments: dict[str, Any]) -> bool:
            self.approvals.append((tool.name, dict(arguments)))
            if callable(approve):
                return bool(approve(tool.name, arguments))
            return bool(approve)

        return approver


def _default_id(obj: Any) -> str:
    name = getattr(obj, "__name__", None) or type(obj).__module__
    return str(name)
