"""Who is told of which change: resource subscriptions and list changes, both protocol eras.

A :class:`Subscriber` is one party that hears of changes: a legacy session (2025-11-25 and
before: ``resources/subscribe``, and the list changes its capabilities promise) or one
``subscriptions/listen`` stream (2026-07-28). The :class:`SubscriptionHub` keeps their
subscriptions, asks the providers to watch each URI someone subscribed to (one watch per URI,
however many subscribe), and tells the subscribers:

- at most one ``notifications/resources/updated`` per URI every :data:`THROTTLE` seconds: the
  first change at once, the changes that follow within the interval together at its end, so
  the last change is always told;
- a legacy session is not told of the changes its own tool calls made (it knows them); a
  listen stream, which has no session, is told of every change;
- what a subscriber has not read yet waits as a set of URIs and list kinds, each once: a
  client that stops reading its stream holds at most one entry per subscription, never a
  growing queue.

Nothing here speaks HTTP or JSON-RPC: the surface gives each subscriber its ``send``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Literal

from .registry import Change, ResourceError, ResourceRegistry, Scope

log = logging.getLogger("jupyter_mcp.resources")

#: Seconds between two notifications of one URI at least.
THROTTLE = 0.5
#: Resources one subscriber may watch at most.
MAX_SUBSCRIPTIONS = 10_000
#: ``subscriptions/listen`` streams open at once at most.
MAX_STREAMS = 1024
#: Legacy sessions remembered at most (the oldest is forgotten first).
MAX_SESSIONS = 10_000

#: The lists whose changes a subscriber may hear of.
ListKind = Literal["tools", "prompts", "resources"]
#: What a subscriber is told: ``("updated", uri)``, ``("list", kind)`` or, on a listen stream
#: that asked for task notifications, ``("task", task_id)``.
Notice = tuple[str, str]


class Subscriber:
    """One party told of changes, with what it has not been sent yet.

    ``send`` delivers one notice (it may wait while the client does not read); notices that
    come meanwhile wait, each once. ``own`` is the legacy session whose own changes are left
    out.
    """

    def __init__(
        self,
        scope: Scope,
        send: Callable[[Notice], Awaitable[None]],
        *,
        own: str | None = None,
        lists: Iterable[ListKind] = (),
    ) -> None:
        self.scope = scope
        self.own = own
        self.lists: set[ListKind] = set(lists)
        self.uris: set[str] = set()
        self._send = send
        self._pending: OrderedDict[Notice, None] = OrderedDict()
        self._wake = asyncio.Event()
        self.closed = False

    @property
    def waiting(self) -> int:
        """How many notices wait to be sent (bounded by the subscriptions and list kinds)."""
        return len(self._pending)

    def offer(self, notice: Notice) -> None:
        """Queue ``notice`` unless it waits already."""
        if self.closed:
            return
        self._pending[notice] = None
        self._wake.set()

    def close(self) -> None:
        """Send nothing more; :meth:`run` returns."""
        self.closed = True
        self._pending.clear()
        self._wake.set()

    async def run(self) -> None:
        """Send the notices as they come, one at a time, until closed (or sending fails)."""
        while not self.closed:
            await self._wake.wait()
            self._wake.clear()
            while self._pending and not self.closed:
                notice, _ = self._pending.popitem(last=False)
                try:
                    await self._send(notice)
                except Exception:  # the session or stream is gone
                    log.debug("resource subscriptions: a notice was not delivered", exc_info=True)
                    self.close()


@dataclass
class _Throttle:
    last: float = -math.inf
    authors: set[str | None] = field(default_factory=set)
    timer: asyncio.TimerHandle | None = None


class SubscriptionHub:
    """The subscriptions of every connection, and the watches they need."""

    def __init__(self, resources: ResourceRegistry, *, throttle: float = THROTTLE) -> None:
        self.resources = resources
        self.throttle = throttle
        self._by_uri: dict[str, set[Subscriber]] = {}
        self._watches: dict[str, Callable[[], None]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._throttles: dict[str, _Throttle] = {}
        self._sessions: OrderedDict[str, tuple[Subscriber, asyncio.Task[None]]] = OrderedDict()
        self._streams: set[Subscriber] = set()
        self._list_stops: list[Callable[[], None]] = []

    # -- subscribers -------------------------------------------------------------------------

    def session(
        self, session_id: str, scope: Scope, send: Callable[[Notice], Awaitable[None]]
    ) -> Subscriber:
        """The subscriber of legacy session ``session_id`` (made on first use, then kept
        until :meth:`forget_session`). It hears of resource list changes."""
        found = self._sessions.get(session_id)
        if found is not None and not found[0].closed:
            self._sessions.move_to_end(session_id)
            return found[0]
        subscriber = Subscriber(scope, send, own=session_id, lists=("resources",))
        task = asyncio.get_running_loop().create_task(subscriber.run())
        self._sessions[session_id] = (subscriber, task)
        self._lists_changed()
        while len(self._sessions) > MAX_SESSIONS:
            self.forget_session(next(iter(self._sessions)))
        return subscriber

    def known_session(self, session_id: str) -> Subscriber | None:
        """The subscriber of a legacy session that has one."""
        found = self._sessions.get(session_id)
        return found[0] if found is not None else None

    def forget_session(self, session_id: str) -> None:
        """A legacy session ended: its subscriptions go."""
        found = self._sessions.pop(session_id, None)
        if found is not None:
            self.remove(found[0])
            found[1].cancel()

    def sessions(self) -> list[str]:
        """The legacy sessions that have a subscriber."""
        return list(self._sessions)

    @property
    def streams(self) -> int:
        """How many listen streams are open."""
        return len(self._streams)

    def add_stream(self, subscriber: Subscriber) -> None:
        """Register a listen stream's subscriber (refused past :data:`MAX_STREAMS`)."""
        if len(self._streams) >= MAX_STREAMS:
            raise ResourceError(
                f"The server has {MAX_STREAMS} subscription streams open already; close one first",
                "",
            )
        self._streams.add(subscriber)
        self._lists_changed()

    def remove(self, subscriber: Subscriber) -> None:
        """Stop telling ``subscriber`` anything; its watches go when nobody else needs them."""
        subscriber.close()
        self._streams.discard(subscriber)
        for uri in list(subscriber.uris):
            self._drop(subscriber, uri)
        self._lists_changed()

    # -- subscriptions -----------------------------------------------------------------------

    def check(self, subscriber: Subscriber, uri: str) -> None:
        """Raise :class:`ResourceError` unless ``subscriber`` may watch ``uri``."""
        self.resources.provider_of(uri).check_watch(subscriber.scope, uri)
        if uri not in subscriber.uris and len(subscriber.uris) >= MAX_SUBSCRIPTIONS:
            raise ResourceError(
                f"Too many subscriptions on this connection ({MAX_SUBSCRIPTIONS}); "
                "unsubscribe from some first",
                uri,
            )

    async def subscribe(self, subscriber: Subscriber, uri: str) -> None:
        """Watch ``uri`` for ``subscriber`` (checked first; subscribing twice is once)."""
        self.check(subscriber, uri)
        if uri in subscriber.uris:
            return
        subscriber.uris.add(uri)
        self._by_uri.setdefault(uri, set()).add(subscriber)
        try:
            await self._ensure_watch(uri)
        except BaseException:
            self._drop(subscriber, uri)
            raise
        if subscriber.closed:
            self._drop(subscriber, uri)

    def unsubscribe(self, subscriber: Subscriber, uri: str) -> None:
        """Stop telling ``subscriber`` of ``uri`` (unknown subscriptions are ignored)."""
        self._drop(subscriber, uri)

    async def _ensure_watch(self, uri: str) -> None:
        # One watch per URI: concurrent first subscribers wait for the one starting it.
        lock = self._locks.setdefault(uri, asyncio.Lock())
        async with lock:
            if uri in self._watches:
                return
            stop = await self.resources.provider_of(uri).watch(uri, self._changed)
            if uri in self._by_uri:
                self._watches[uri] = stop
            else:  # everyone left while the watch started
                stop()

    def _drop(self, subscriber: Subscriber, uri: str) -> None:
        subscriber.uris.discard(uri)
        holders = self._by_uri.get(uri)
        if holders is None:
            return
        holders.discard(subscriber)
        if holders:
            return
        del self._by_uri[uri]
        self._locks.pop(uri, None)
        stop = self._watches.pop(uri, None)
        if stop is not None:
            try:
                stop()
            except Exception:
                log.exception("resource subscriptions: stopping a watch failed")
        throttle = self._throttles.pop(uri, None)
        if throttle is not None and throttle.timer is not None:
            throttle.timer.cancel()

    @property
    def watched(self) -> int:
        """How many URIs are watched (each once, however many subscribed)."""
        return len(self._watches)

    # -- changes -----------------------------------------------------------------------------

    def _changed(self, change: Change) -> None:
        if change.uri not in self._by_uri:
            return
        throttle = self._throttles.setdefault(change.uri, _Throttle())
        throttle.authors.add(change.actor.session if change.actor is not None else None)
        if throttle.timer is not None:
            return  # told at the end of the interval, with this change
        loop = asyncio.get_running_loop()
        delay = throttle.last + self.throttle - loop.time()
        if delay <= 0:
            self._flush(change.uri)
        else:
            throttle.timer = loop.call_later(delay, self._flush, change.uri)

    def _flush(self, uri: str) -> None:
        throttle = self._throttles.get(uri)
        if throttle is None:
            return
        throttle.timer = None
        authors, throttle.authors = throttle.authors, set()
        throttle.last = asyncio.get_running_loop().time()
        provider = self.resources.provider_of(uri)
        for subscriber in list(self._by_uri.get(uri, ())):
            if subscriber.own is not None and authors == {subscriber.own}:
                continue  # only its own tool calls changed it
            try:
                provider.check_watch(subscriber.scope, uri)  # a policy may have changed since
            except ResourceError:
                continue
            subscriber.offer(("updated", uri))

    def list_changed(self, kind: ListKind) -> None:
        """Tell every subscriber that hears of ``kind`` list changes."""
        for subscriber, _ in list(self._sessions.values()):
            if kind in subscriber.lists:
                subscriber.offer(("list", kind))
        for subscriber in list(self._streams):
            if kind in subscriber.lists:
                subscriber.offer(("list", kind))

    def _lists_changed(self) -> None:
        """Watch the providers' lists while someone hears of resource list changes."""
        wanted = any(
            "resources" in s.lists and not s.closed
            for s in [*(entry[0] for entry in self._sessions.values()), *self._streams]
        )
        if wanted and not self._list_stops:
            self._list_stops = [
                provider.watch_list(lambda: self.list_changed("resources"))
                for provider in self.resources.providers
            ]
        elif not wanted and self._list_stops:
            for stop in self._list_stops:
                stop()
            self._list_stops = []

    async def close(self) -> None:
        """End every stream (gracefully: each answers its request) and every subscription."""
        for subscriber in list(self._streams):
            subscriber.close()
        for session_id in list(self._sessions):
            self.forget_session(session_id)
        for uri in list(self._by_uri):
            for subscriber in list(self._by_uri.get(uri, ())):
                self._drop(subscriber, uri)
        for stop in self._list_stops:
            with contextlib.suppress(Exception):
                stop()
        self._list_stops = []
