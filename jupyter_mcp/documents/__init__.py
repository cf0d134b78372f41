"""The one read/write path for project files: file facts (``facts``), reads and the write
transaction (``files``), and notebooks as percent-format text (``notebook_view``)."""
