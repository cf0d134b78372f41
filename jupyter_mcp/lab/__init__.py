"""The link to JupyterLab windows: active editor, approvals, activity, breakpoint sync."""
