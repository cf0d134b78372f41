"""An example jupyter-mcp plugin: note tools (see ``plugin.py``)."""
