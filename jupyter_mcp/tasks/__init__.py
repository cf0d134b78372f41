"""MCP tasks: tool calls whose work outlives the request that started them.

:mod:`.store` keeps the tasks (who started them, how their work ends, how long their results
are kept) without knowing any wire format; :mod:`.protocol` is their MCP face in both protocol
eras (the 2025-11-25 core ``tasks/*`` methods and the 2026-07-28 ``io.modelcontextprotocol/tasks``
extension), installed on the standard MCP surface's SDK server.
"""
