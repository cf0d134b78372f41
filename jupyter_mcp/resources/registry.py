"""The resource providers of a server and what one connection may see of them.

A :class:`ResourceProvider` serves one family of URIs (``jupyter-mcp://`` here; the Apps views
add ``ui://`` by registering a provider of their own): it lists its resources in pages, reads
one, completes the arguments of its templates and watches a resource for changes. The
:class:`ResourceRegistry` asks each provider in turn, pages ``resources/list`` across them,
and finds the provider of a URI. Every call gets the connection's :class:`Scope`, which says
which tools (and so which resources) the connection may use.
"""

from __future__ import annotations

import base64
import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from ..core.context import Actor, ToolContext
from ..core.errors import ToolError
from ..core.registry import Registry

#: Entries of one ``resources/list`` page at most.
PAGE_SIZE = 1000
#: Values of one ``completion/complete`` answer at most (the protocol's limit).
MAX_COMPLETIONS = 100

#: A resource's contents as ``resources/read`` answers them.
Contents = types.TextResourceContents | types.BlobResourceContents


class ResourceError(Exception):
    """A resource request that cannot be served, with a message the client can act on.

    ``not_found`` errors (no such resource) get each protocol era's not-found code; the others
    (a URI that is not a resource of this server, one the connection may not use) are invalid
    parameters.
    """

    def __init__(self, message: str, uri: str, *, not_found: bool = False) -> None:
        super().__init__(message)
        self.uri = uri
        self.not_found = not_found


@dataclass(frozen=True)
class Scope:
    """What one request may use: the server's tools, under the connection's tool sets."""

    ctx: ToolContext
    registry: Registry
    #: The tool sets the connection chose (None: every one the server serves).
    toolsets: frozenset[str] | None = None
    #: Whether the connection may use read-only tools only (an OAuth grant of reading).
    read_only: bool = False

    def refusal(self, tool: str) -> str | None:
        """Why ``tool`` cannot be used on this connection now, or None when it can."""
        try:
            self.registry.get(tool, self.ctx, self.toolsets, read_only=self.read_only)
        except ToolError as e:
            return str(e)
        return None

    def allows(self, tool: str) -> bool:
        """Whether ``tool`` can be used on this connection now."""
        return self.refusal(tool) is None


@dataclass(frozen=True)
class Change:
    """A resource changed (``uri``); ``actor`` is the session whose tool call changed it,
    when one did (None: the user, another program, or a change nobody claimed)."""

    uri: str
    actor: Actor | None = None


#: Told of each change of a watched resource (on the event loop).
ChangeListener = Callable[[Change], None]
#: Told that a provider's list of resources changed (on the event loop).
ListListener = Callable[[], None]


class ResourceProvider(ABC):
    """One family of resource URIs: what is listed, read, completed and watched there.

    Every method gets the connection's :class:`Scope`; a provider answers only what that scope
    may use, and raises :class:`ResourceError` for anything else.
    """

    @abstractmethod
    def owns(self, uri: str) -> bool:
        """Whether ``uri`` is one of this provider's (whether it exists or not)."""

    def templates(self, scope: Scope) -> list[types.ResourceTemplate]:
        """The URI templates of the resources ``scope`` may read."""
        return []

    async def list_page(
        self, scope: Scope, start: int, limit: int
    ) -> tuple[list[types.Resource], bool]:
        """Up to ``limit`` listed resources from position ``start``, and whether more follow."""
        return [], False

    @abstractmethod
    async def read(self, scope: Scope, uri: str) -> list[Contents]:
        """The contents of ``uri``."""

    async def complete(
        self, scope: Scope, template: str, argument: str, value: str, context: dict[str, str]
    ) -> types.Completion | None:
        """Completions of ``argument`` of ``template`` typed as ``value`` so far (``context``:
        the arguments already chosen); None when ``template`` is not this provider's."""
        return None

    def check_watch(self, scope: Scope, uri: str) -> None:
        """Raise :class:`ResourceError` unless ``scope`` may subscribe to ``uri``.

        A resource that does not exist yet may be watched (it is told when it appears), but
        one the connection could never read may not.
        """
        raise ResourceError(f"Resource {uri} cannot be subscribed to", uri)

    async def watch(self, uri: str, changed: ChangeListener) -> Callable[[], None]:
        """Start telling ``changed`` of the changes of ``uri`` (once :meth:`check_watch`
        allowed it); returns the function that stops. When it returns, every later change is
        told."""
        return lambda: None

    def watch_list(self, changed: ListListener) -> Callable[[], None]:
        """Start telling ``changed`` when the listed resources change; returns the stop."""
        return lambda: None

    async def close(self) -> None:  # noqa: B027 - most providers run nothing to stop
        """Stop whatever the provider runs (the server stops)."""


@dataclass
class ResourceRegistry:
    """The server's resource providers, asked in the order they were added."""

    providers: list[ResourceProvider] = field(default_factory=list)

    def add(self, provider: ResourceProvider) -> None:
        """Serve ``provider``'s resources too (after those added before it)."""
        self.providers.append(provider)

    def provider_of(self, uri: str) -> ResourceProvider:
        """The provider of ``uri``; a :class:`ResourceError` when no provider has it."""
        for provider in self.providers:
            if provider.owns(uri):
                return provider
        raise ResourceError(
            f"Resource not found: {uri} is not a resource of this server", uri, not_found=True
        )

    def templates(self, scope: Scope) -> list[types.ResourceTemplate]:
        """Every template ``scope`` may read, provider by provider."""
        return [t for provider in self.providers for t in provider.templates(scope)]

    async def list_page(
        self, scope: Scope, cursor: str | None, limit: int = PAGE_SIZE
    ) -> tuple[list[types.Resource], str | None]:
        """One page of every provider's listed resources and the cursor of the next."""
        index, start = decode_cursor(cursor)
        found: list[types.Resource] = []
        while index < len(self.providers) and len(found) < limit:
            items, more = await self.providers[index].list_page(scope, start, limit - len(found))
            found.extend(items)
            if more:
                start += len(items)
            else:
                index, start = index + 1, 0
        following = None if index >= len(self.providers) else encode_cursor(index, start)
        return found, following

    async def read(self, scope: Scope, uri: str) -> list[Contents]:
        """The contents of ``uri``, from its provider."""
        return await self.provider_of(uri).read(scope, uri)

    async def complete(
        self, scope: Scope, template: str, argument: str, value: str, context: dict[str, str]
    ) -> types.Completion:
        """Completions of a template's argument; a :class:`ResourceError` for an unknown one."""
        for provider in self.providers:
            completion = await provider.complete(scope, template, argument, value, context)
            if completion is not None:
                return completion
        raise ResourceError(f"No resource template {template} to complete", template)

    async def close(self) -> None:
        """Stop every provider."""
        for provider in self.providers:
            await provider.close()


def encode_cursor(provider: int, start: int) -> str:
    """An opaque ``resources/list`` cursor: which provider, and where in its list."""
    return base64.urlsafe_b64encode(json.dumps([provider, start]).encode()).decode()


def decode_cursor(cursor: str | None) -> tuple[int, int]:
    """Where a cursor points; a :class:`ResourceError` when it is not one of ours."""
    if cursor is None:
        return 0, 0
    try:
        provider, start = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, TypeError) as e:
        raise ResourceError(f"Invalid cursor: {cursor!r}", cursor) from e
    for value in (provider, start):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ResourceError(f"Invalid cursor: {cursor!r}", cursor)
    return provider, start


def completion(values: list[str], total: int | None = None) -> types.Completion:
    """At most :data:`MAX_COMPLETIONS` of ``values`` (of ``total`` in all) as an answer."""
    total = len(values) if total is None else total
    shown = values[:MAX_COMPLETIONS]
    return types.Completion(values=shown, total=total, has_more=total > len(shown))


def any_json(value: Any) -> str:
    """``value`` as the JSON text of an ``application/json`` resource."""
    return json.dumps(value, ensure_ascii=False)
