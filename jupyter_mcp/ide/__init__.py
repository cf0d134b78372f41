"""The IDE in a notebook's kernel: finding the server (:mod:`.server`), the MCP session
(:mod:`.client`), the tools as methods (:mod:`.api`), answers that show themselves
(:mod:`.results`) and the ``%mcp`` magics (:mod:`.magics`). Notebooks use it through
:mod:`jupyter_mcp.ipython` (``%load_ext jupyter_mcp``; ``from jupyter_mcp.ipython import
ide``).
"""
