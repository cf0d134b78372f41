"""``python -m jupyter_mcp.cli``: the ``jupyter-mcp`` command without its console script."""

import sys

from .main import main

sys.exit(main())
