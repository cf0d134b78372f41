"""The MCP SDK's own Streamable HTTP server, one tool, no Jupyter: ``bench_mcp``'s SDK reference.

    python benchmarks/_sdk_server.py PORT ROOT

Serves ``/mcp`` on ``127.0.0.1:PORT`` with the SDK's low-level ``Server`` and its Starlette app
under uvicorn (legacy sessions, JSON answers, as jupyter_mcp answers them), and one tool,
``get_file_text_by_path``, that answers a file of ROOT in the shape jupyter_mcp's tool does (the
structured result and its mirror as text). No auth, no policy, no result window: what a
``tools/call`` costs in the SDK's transport and dispatcher alone, on the HTTP server the SDK is
built for. Started and stopped by :func:`_server.sdk_server`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, cast

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server

TOOL = types.Tool(
    name="get_file_text_by_path",
    description="The text of a file of the project.",
    input_schema={
        "type": "object",
        "properties": {"pathInProject": {"type": "string"}},
        "required": ["pathInProject"],
    },
)


def main() -> None:
    port, root = int(sys.argv[1]), Path(sys.argv[2]).resolve()

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[TOOL])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> dict[str, Any]:
        name = str((params.arguments or {})["pathInProject"])
        path = root / name
        value = {"content": path.read_text(), "path": str(path), "relativePath": name}
        # As MCP has it (and jupyter_mcp answers): the structured result, mirrored as text.
        return {
            "content": [{"type": "text", "text": json.dumps(value)}],
            "structuredContent": value,
            "isError": False,
        }

    # The answer goes out as a wire dict, as jupyter_mcp's does (the SDK takes one besides its
    # models, and skips building a model only to dump it).
    server: Server[Any] = Server(
        "sdk-reference", on_list_tools=list_tools, on_call_tool=cast(Any, call_tool)
    )
    app = server.streamable_http_app(json_response=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
