"""The ``jupyter mcp-ide`` command: the stdio relay, discovery of running servers, client snippets.

The program's name is spelled here only: the console script ``jupyter-mcp-ide`` is what Jupyter
runs for ``jupyter mcp-ide …``. It is not ``jupyter-mcp``, the script datalayer's
``jupyter-mcp-server`` (and the ``jupyter-mcp`` placeholder on PyPI) install, so both packages
can live in one environment without one program silently replacing the other.
"""

#: The distribution (what ``pip install`` takes; pyproject.toml ``[project] name``).
DISTRIBUTION = "jupyter-mcp-ide"
#: The console script (pyproject.toml ``[project.scripts]`` names the same).
PROGRAM = "jupyter-mcp-ide"
#: How users type it through Jupyter's command dispatcher: ``jupyter mcp-ide``.
JUPYTER_COMMAND = "jupyter " + PROGRAM.removeprefix("jupyter-")
