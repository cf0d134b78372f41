"""The one exception type tool code raises; each surface maps it to its own wire form."""

from __future__ import annotations


class ToolError(Exception):
    """A tool could not do its job; the message is shown to the agent as is."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message
