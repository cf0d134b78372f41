"""Views of tool results for clients that show them (the MCP Apps extension).

:mod:`.catalog` says which views there are, which tools they show and which clients get them;
:mod:`.data` makes the bounded data a result carries for its view; :mod:`.pages` serves the
pages as ``ui://`` resources. The pages themselves are built from ``labextension/src/views``
into ``static/``.
"""
