"""Action tools: JupyterLab's command registry, through the editor link.

``list_available_actions`` lists the commands a user could run now in the active JupyterLab
window (enabled, visible, with a label). ``execute_action_by_id`` runs one without waiting for
it to finish. Commands that act on the server (see
:data:`~jupyter_mcp.core.context.ACTION_APPROVAL_PATTERNS`, configurable as
``c.JupyterMCP.action_approval_patterns``) run only after the user approves them in JupyterLab.
"""

from __future__ import annotations

import fnmatch

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.registry import ToolSet
from ..lab.editor import connected_editor

tools = ToolSet("actions")

NO_WINDOW = (
    "No JupyterLab window is connected, so there are no actions; open JupyterLab in a "
    "browser (or use the file tools such as rewrite_file_content)"
)


def action_needs_approval(action_id: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """True when ``action_id`` matches one of the glob ``patterns`` (case-insensitive)."""
    lowered = action_id.lower()
    return any(fnmatch.fnmatchcase(lowered, p.lower()) for p in patterns)


@tools.tool(
    "list_available_actions",
    "The JupyterLab commands that can run now in the active window: [{id, text}].",
    read_only=True,
    title="List actions",
)
async def list_available_actions(ctx: ToolContext) -> list[dict[str, str]]:
    """The window's runnable commands, sorted by id."""
    bridge = connected_editor(ctx, NO_WINDOW)
    commands = await bridge.ask().list_commands()
    if not isinstance(commands, list):
        raise ToolError("The JupyterLab window sent a malformed command list")
    found = {
        c["id"]: c["text"]
        for c in commands
        if isinstance(c, dict) and isinstance(c.get("id"), str) and isinstance(c.get("text"), str)
    }
    return [{"id": key, "text": found[key]} for key in sorted(found)]


@tools.tool(
    "execute_action_by_id",
    "Run a JupyterLab command by id (from list_available_actions) in the active window, "
    "without waiting for it to end. Commands that delete, run code, drive kernels … first ask "
    'the user\'s approval. Answers "ok" or "action not found".',
    {"actionId": {"type": "string", "minLength": 1, "description": "e.g. docmanager:save"}},
    required=["actionId"],
    destructive=True,
    open_world=False,
    title="Execute action",
)
async def execute_action_by_id(ctx: ToolContext, actionId: str) -> str:
    """Run the command in the window; "action not found" for an unknown id."""
    bridge = connected_editor(ctx, NO_WINDOW)
    if action_needs_approval(actionId, ctx.settings.action_approval_patterns):
        if not await bridge.ask().has_command(actionId):
            return "action not found"
        tool = next(t for t in tools if t.name == "execute_action_by_id")
        await ctx.request_approval(tool, {"actionId": actionId})
    result = await bridge.ask().execute_command(actionId)
    if result == "not found":
        return "action not found"
    return "ok"
