"""OAuth scopes of the MCP endpoint, and what a token holding them may use.

| scope | grants |
|---|---|
| ``mcp`` | the tools this server serves (its tool sets and policies) |
| ``mcp:read`` | only the read-only tools |
| ``mcp:toolsets:<a>,<b>`` | only the tools of those tool sets |

``mcp:read`` and ``mcp:toolsets:…`` narrow what a token may use; they never widen it, so a
token with ``mcp mcp:read`` is read-only. Several ``mcp:toolsets:`` scopes add up to the union of
their sets. ``offline_access`` (asked by clients that want a refresh token) is accepted and
means nothing more: every grant gets one. Nothing here knows HTTP or storage.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..core.errors import ToolError
from ..core.registry import TOOLSETS, parse_toolsets

BASE = "mcp"
READ = "mcp:read"
TOOLSETS_PREFIX = "mcp:toolsets:"
#: Accepted for clients that ask for a refresh token this way; every grant has one anyway.
OFFLINE = "offline_access"


class ScopeError(ValueError):
    """A scope this server does not know (the message says which, and which exist)."""


@dataclass(frozen=True)
class Access:
    """What a token may use: read-only or not, and which tool sets (None: every one)."""

    read_only: bool = False
    toolsets: frozenset[str] | None = None

    def within(self, other: Access) -> bool:
        """Whether this access is no broader than ``other`` (the grant it must stay inside)."""
        if other.read_only and not self.read_only:
            return False
        if other.toolsets is None:
            return True
        return self.toolsets is not None and self.toolsets <= other.toolsets

    def describe(self) -> str:
        """In words, for people: the consent page, the list of grants."""
        what = "read-only tools" if self.read_only else "every tool"
        if self.toolsets is None:
            return f"{what} of every tool set"
        return f"{what} of the tool sets {', '.join(sorted(self.toolsets))}"


def parse_scopes(scopes: Iterable[str]) -> list[str]:
    """The scopes of a request, checked and in canonical order; ``mcp`` when none was asked.

    A :class:`ScopeError` names a scope this server does not know, or an unknown tool set.
    """
    base = False
    read = False
    sets: set[str] = set()
    for scope in scopes:
        if scope == BASE:
            base = True
        elif scope == READ:
            read = True
        elif scope.startswith(TOOLSETS_PREFIX):
            try:
                sets |= parse_toolsets(scope[len(TOOLSETS_PREFIX) :])
            except ToolError as e:
                raise ScopeError(f"Scope {scope}: {e}") from None
        elif scope == OFFLINE:
            continue
        else:
            raise ScopeError(
                f"Unknown scope {scope!r}: this server's scopes are {BASE}, {READ} and "
                f"{TOOLSETS_PREFIX}<sets> (sets among {', '.join(TOOLSETS)})"
            )
    return make_scopes(read, frozenset(sets) if sets else None, base=base or not (read or sets))


def make_scopes(
    read_only: bool, toolsets: frozenset[str] | None, *, base: bool = True
) -> list[str]:
    """The canonical scope list of an access (``base``: with ``mcp`` itself)."""
    scopes = [BASE] if base else []
    if read_only:
        scopes.append(READ)
    if toolsets is not None:
        scopes.append(TOOLSETS_PREFIX + ",".join(t for t in TOOLSETS if t in toolsets))
    return scopes


def access_of(scopes: Iterable[str]) -> Access:
    """What a token holding ``scopes`` (already checked) may use."""
    read = False
    sets: set[str] | None = None
    for scope in scopes:
        if scope == READ:
            read = True
        elif scope.startswith(TOOLSETS_PREFIX):
            sets = (sets or set()) | set(scope[len(TOOLSETS_PREFIX) :].split(","))
    return Access(read_only=read, toolsets=None if sets is None else frozenset(sets))


def supported_scopes(served: Iterable[str]) -> list[str]:
    """The scopes to advertise: the base, read-only, and one tool set scope per set served."""
    return [BASE, READ, *(TOOLSETS_PREFIX + name for name in TOOLSETS if name in set(served))]
