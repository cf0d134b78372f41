"""``python -m jupyter_mcp.cli``: the ``jupyter-mcp-ide`` command without its console script."""

import sys

from .main import main

sys.exit(main())
