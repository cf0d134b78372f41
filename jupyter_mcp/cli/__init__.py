"""The `jupyter mcp` command: the stdio relay, discovery of running servers, client snippets."""
