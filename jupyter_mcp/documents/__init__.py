"""The one read/write path for project files, and notebooks as percent-format text."""
