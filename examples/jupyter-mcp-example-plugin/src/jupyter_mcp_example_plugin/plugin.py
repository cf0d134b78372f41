"""Note tools for jupyter-mcp: the plugin object is this module (``tools`` and ``call``).

Declared in ``pyproject.toml`` as the entry point ``example.notes`` in the group
``jupyter_mcp.tools``. ``call`` runs in a worker thread of the server, with a time budget; it
receives arguments already checked against the tool's schema and returns text.
"""

from __future__ import annotations

import json
import time
from typing import Any

NOTES = "notes"
TITLE = {
    "type": "string",
    "pattern": "^[A-Za-z0-9][A-Za-z0-9 _-]{0,79}$",
    "description": "Title of the note: letters, digits, spaces, '-' and '_'.",
}

tools = [
    {
        "name": "find_notes",
        "description": "Find lines of the project's notes (notes/*.md) that contain a text.",
        # A path inside this package: read with importlib.resources when the plugin loads.
        "inputSchema": "schemas/find_notes.schema.json",
        "readOnly": True,
        "destructive": False,
    },
    {
        "name": "add_note",
        "description": "Create notes/<title>.md with the given Markdown body.",
        "inputSchema": {
            "type": "object",
            "properties": {"title": TITLE, "body": {"type": "string"}},
            "required": ["title", "body"],
            "additionalProperties": False,
        },
        "readOnly": False,
        "destructive": False,
    },
    {
        "name": "append_note",
        "description": "Append Markdown text to the end of notes/<title>.md.",
        "inputSchema": {
            "type": "object",
            "properties": {"title": TITLE, "text": {"type": "string"}},
            "required": ["title", "text"],
            "additionalProperties": False,
        },
        "readOnly": False,
        "destructive": False,
    },
    {
        "name": "delete_note",
        "description": "Delete notes/<title>.md. Asks the user first.",
        "inputSchema": {
            "type": "object",
            "properties": {"title": TITLE},
            "required": ["title"],
            "additionalProperties": False,
        },
        "readOnly": False,
        "destructive": True,
    },
    {
        "name": "list_notebooks",
        "description": "List the notebooks at the top of the project, through Jupyter's contents.",
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
        "readOnly": True,
        "destructive": False,
    },
    {
        "name": "wait",
        "description": "Wait some seconds, then say so (a slow tool).",
        "inputSchema": {
            "type": "object",
            "properties": {"seconds": {"type": "number", "minimum": 0, "maximum": 60}},
            "required": ["seconds"],
            "additionalProperties": False,
        },
        "readOnly": True,
        "destructive": False,
        # Its work can outlast a client's request: MCP clients may run it as a task.
        "taskSupport": True,
    },
    {
        "name": "fail",
        "description": "Raise an exception with the given message (a tool that fails).",
        "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
            "additionalProperties": False,
        },
        "readOnly": True,
        "destructive": False,
    },
    {
        "name": "repeat",
        "description": 'Repeat a text; the answer is JSON: {"text": ..., "length": ...}.',
        "inputSchema": {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "times": {"type": "integer", "minimum": 0, "maximum": 10000000},
            },
            "required": ["text", "times"],
            "additionalProperties": False,
        },
        "readOnly": True,
        "destructive": False,
    },
]


def call(tool: str, arguments: dict[str, Any], ctx: Any) -> str:
    """Run ``tool`` (its local name) with checked ``arguments``; ``ctx`` is the server's."""
    if tool == "find_notes":
        return _find_notes(ctx, arguments["text"], arguments.get("limit", 100))
    if tool == "add_note":
        shown = f"{NOTES}/{arguments['title']}.md"
        path = ctx.resolve(shown)
        if path.exists():
            raise ValueError(f"Note {shown} exists already")
        path.parent.mkdir(parents=True, exist_ok=True)
        # ctx.write_text, not open(): the file lock, the unsaved-edit guard, editor reload.
        ctx.write_text(shown, arguments["body"])
        ctx.log.info("created %s", shown)
        return f"Created {shown}"
    if tool == "append_note":
        shown = f"{NOTES}/{arguments['title']}.md"
        if not ctx.resolve(shown).is_file():
            raise ValueError(f"No note {shown}")
        # The read-modify-write holds the file's lock throughout.
        ctx.edit_text(shown, lambda text: text + arguments["text"])
        return f"Appended to {shown}"
    if tool == "delete_note":
        path = ctx.resolve(f"{NOTES}/{arguments['title']}.md")
        if not path.is_file():
            raise ValueError(f"No note {ctx.relative(path)}")
        path.unlink()
        return f"Deleted {ctx.relative(path)}"
    if tool == "list_notebooks":
        if ctx.contents_manager is None:
            raise RuntimeError("This tool needs the server's contents manager")
        model = ctx.run_async(ctx.contents_manager.get("", content=True))
        names = sorted(item["path"] for item in model["content"] if item["type"] == "notebook")
        return json.dumps(names)
    if tool == "wait":
        time.sleep(arguments["seconds"])
        return f"Waited {arguments['seconds']} s"
    if tool == "fail":
        raise RuntimeError(arguments["message"])
    if tool == "repeat":
        text = arguments["text"] * arguments["times"]
        return json.dumps({"text": text, "length": len(text)})
    raise ValueError(f"Unknown tool {tool}")


def _find_notes(ctx: Any, text: str, limit: int) -> str:
    folder = ctx.resolve(NOTES)
    wanted = text.lower()
    found: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if wanted in line.lower():
                found.append({"path": ctx.relative(path), "line": number, "text": line})
                if len(found) >= limit:
                    return json.dumps(found)
    return json.dumps(found)
