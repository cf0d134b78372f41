"""The link to JupyterLab windows: active editor, approvals, activity, breakpoint sync, and the
requests a window answers (``protocol.json``, shared with the labextension)."""
