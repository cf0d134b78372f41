"""MCP resources: the project's files, notebooks, cells, outputs and kernel variables as things
a client lists, reads, completes and watches.

- :mod:`.registry`: the provider registry (one provider per URI family, each with list, read,
  complete and watch), the connection's :class:`~.registry.Scope` and the errors;
- :mod:`.project`: the ``jupyter-mcp://`` provider, reading through the tools' domain code
  under the same policies as the tools;
- :mod:`.changes`: where changes come from (files on disk, JupyterLab windows, shared
  documents, kernels);
- :mod:`.subscriptions`: who is told of which change, at most twice a second per URI;
- :mod:`.links`: the ``resource_link`` blocks of tool results.

Nothing here speaks HTTP: :mod:`jupyter_mcp.surfaces.mcp` wires it to the SDK's server.
"""
