"""The ``JupyterMCP`` server extension: configuration, the shared tool context, the routes."""

from __future__ import annotations

from typing import Any

from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Float, Int, List, Unicode, observe

from . import __version__
from .context import ACTION_APPROVAL_PATTERNS, Settings, ToolContext
from .editor import EditorBridge
from .registry import Registry
from .tools import builtin_tools


class JupyterMCP(ExtensionApp):
    """Serves the IDE tool set to MCP clients on the Jupyter server's own port."""

    name = "jupyter_mcp"
    app_name = "Jupyter MCP"
    description = __doc__
    load_other_extensions = True

    read_only = Bool(
        False,
        config=True,
        help="Hide and refuse every tool that is not read-only (the specification's Restricted Mode).",
    )
    disabled_tools = List(
        Unicode(),
        default_value=[],
        config=True,
        help="Names of tools to hide and refuse, for example ['run_command_on_background'].",
    )
    disabled_plugins = List(
        Unicode(),
        default_value=[],
        config=True,
        help="Plugin ids whose tools are hidden and refused.",
    )
    result_window = Int(
        8000,
        config=True,
        help="Largest result window, in characters, that one call returns (resultEnd - resultStart).",
    )
    max_body_bytes = Int(
        16 * 1024 * 1024,
        config=True,
        help="Largest request body, in bytes, that a tool route accepts.",
    )
    max_result_bytes = Int(
        16 * 1024 * 1024,
        config=True,
        help="Largest result, in bytes, returned whole when the caller asked for no window.",
    )
    max_file_bytes = Int(
        16 * 1024 * 1024,
        config=True,
        help="Largest file, in bytes, that the text tools read or edit.",
    )
    allowed_origins = List(
        Unicode(),
        default_value=[],
        config=True,
        help=(
            "Browser origins (such as 'https://example.org') allowed to call the tool routes, "
            "besides the server's own and those of ServerApp.allow_origin."
        ),
    )
    approval_timeout = Float(
        120.0,
        config=True,
        help="Seconds to wait for the user to approve a call in JupyterLab before it fails.",
    )

    action_approval_patterns = List(
        Unicode(),
        default_value=list(ACTION_APPROVAL_PATTERNS),
        config=True,
        help=(
            "Glob patterns (case-insensitive) of JupyterLab command ids that execute_action_by_id "
            "runs only after the user approves them in JupyterLab. The default covers commands "
            "that delete, rename or move files, run code, drive kernels or the debugger, open "
            "terminals, log out or change extensions; ['*'] asks for every command."
        ),
    )

    registry: Registry
    tool_context: ToolContext

    def settings_snapshot(self) -> Settings:
        """The current policies as the plain object tools read."""
        return Settings(
            read_only=self.read_only,
            disabled_tools=frozenset(self.disabled_tools),
            disabled_plugins=frozenset(self.disabled_plugins),
            result_window=self.result_window,
            max_body_bytes=self.max_body_bytes,
            max_result_bytes=self.max_result_bytes,
            max_file_bytes=self.max_file_bytes,
            approval_timeout=self.approval_timeout,
            action_approval_patterns=tuple(self.action_approval_patterns),
        )

    @observe(
        "read_only",
        "disabled_tools",
        "disabled_plugins",
        "result_window",
        "max_body_bytes",
        "max_result_bytes",
        "max_file_bytes",
        "approval_timeout",
        "action_approval_patterns",
    )
    def _policy_changed(self, change: dict[str, Any]) -> None:
        if hasattr(self, "tool_context"):
            self.tool_context.settings = self.settings_snapshot()

    def initialize_settings(self) -> None:
        """Build the registry and the context every tool call shares."""
        root_dir = self.serverapp.root_dir
        self.tool_context = ToolContext(
            root_dir=root_dir,
            settings=self.settings_snapshot(),
            log=self.log,
            serverapp=self.serverapp,
        )
        self.registry = Registry(builtin_tools())
        EditorBridge(self.tool_context).install(self.registry)
        self.log.info(
            "jupyter_mcp %s: %d tools for %s", __version__, len(self.registry.all()), root_dir
        )

    def initialize_handlers(self) -> None:
        """Register the seed REST and proxy REST routes under the server's base_url."""
        from .handlers import default_handlers

        self.handlers.extend(default_handlers())


main = launch_instance = JupyterMCP.launch_instance
