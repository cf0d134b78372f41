"""Call a plugin's tools in pytest, without a server: ``from jupyter_mcp.testing import
PluginHarness``. The harness lives in :mod:`jupyter_mcp.plugins.testing`; this module is the
public name plugin authors import."""

from .core.errors import ToolError
from .plugins.testing import PluginHarness

__all__ = ["PluginHarness", "ToolError"]
