"""MCP prompts: workflows a client shows as commands (``/mcp__jupyter__fix_failing_cell``).

Each prompt's messages embed the resources it is about (the notebook, the failing cell and the
cells it depends on, the diff), read through :mod:`jupyter_mcp.resources`, so the model starts
with the facts; :mod:`.catalog` holds the five prompts.
"""
