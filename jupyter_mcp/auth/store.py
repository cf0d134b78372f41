"""The grants users gave MCP clients, and the clients that registered: one file per user.

A grant is one consent: a client, the scopes the user allowed, who allowed it, for which server
and resource, when, and when it was last used. Its tokens are kept as SHA-256 digests only (they
are 256-bit random strings, so a plain digest is enough): whoever reads the file learns no token.
The file lives in the Jupyter data directory (``jupyter_mcp/oauth.json``), is readable by its
user alone (0600, written with ``jupyter_core.paths.secure_write``) and is replaced atomically,
so a crash never leaves half a file. Every server of the user and ``jupyter mcp-ide clients``
share it: a change is made under an exclusive lock on ``oauth.json.lock``, over the file as it
is on disk then, and each reader notices another process's change by the file's stamp (one
``stat`` per check), so a grant revoked anywhere fails its next request everywhere.

Dynamically registered clients are kept here too, from their first grant on (until then the
provider holds them in memory: registration needs no login, so registrations alone must not
grow this file), their secret, if they asked for one, as issued: a client secret gets nothing
without a grant's refresh token, which is hashed.

Nothing here knows HTTP or OAuth's wire formats; the provider (:mod:`.provider`) does.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_data_dir, secure_write

try:  # POSIX; on Windows the file is still replaced atomically, just not locked
    import fcntl
except ImportError:  # pragma: no cover - not on the platforms CI runs
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("jupyter_mcp.auth")

VERSION = 1
#: Prefixes of the tokens this server issues: recognisable at a glance and by secret scanners.
ACCESS_PREFIX = "jmcp_at_"
REFRESH_PREFIX = "jmcp_rt_"
#: Dynamically registered clients kept at most; beyond it the oldest without a grant go (a
#: client is written with its first grant, so those are clients whose grants all ended).
MAX_CLIENTS = 500
#: Live access tokens per grant: the newest and the one before it (a client that refreshed
#: while a request with the old one was on its way is not failed).
LIVE_ACCESS_TOKENS = 2
#: Rotated-out refresh tokens remembered per grant, to notice one being used again.
SPENT_REFRESH_TOKENS = 8


def default_path() -> Path:
    """``<jupyter data dir>/jupyter_mcp/oauth.json``."""
    return Path(jupyter_data_dir()) / "jupyter_mcp" / "oauth.json"


def digest(token: str) -> str:
    """The stored form of a token."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token(prefix: str) -> str:
    """A fresh token: ``prefix`` and 256 random bits."""
    return prefix + secrets.token_urlsafe(32)


@dataclass
class Grant:
    """One consent, as stored (token digests only)."""

    id: str
    client_id: str
    client_name: str
    #: ``metadata`` (a Client ID Metadata Document URL) or ``dynamic`` (registered here).
    registration: str
    redirect_uri: str
    scopes: list[str]
    #: The Jupyter user who consented (their user name).
    user: str
    #: The canonical URL of the MCP endpoint the tokens are for (their audience).
    resource: str
    issuer: str
    #: Which server issued it (see ``OAuthServer.server_id``): a token is valid on it alone.
    server: str
    created: float
    last_used: float | None = None
    #: Digest of each live access token -> its ``expires`` and ``scopes`` (a refreshed token
    #: may have asked for fewer scopes than the grant's).
    access: dict[str, dict[str, Any]] = field(default_factory=dict)
    refresh: str = ""
    refresh_expires: float = 0.0
    spent_refresh: list[str] = field(default_factory=list)
    #: How Jupyter shows that user (a token login's user is "Anonymous ..." with a random name).
    user_label: str = ""
    #: Grant types the client declared (``refresh_token`` among them or not).
    grant_types: list[str] = field(default_factory=lambda: ["authorization_code", "refresh_token"])

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Grant:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})

    def public(self) -> dict[str, Any]:
        """What the user is shown of it (no digests)."""
        return {
            "id": self.id,
            "clientId": self.client_id,
            "clientName": self.client_name,
            "registration": self.registration,
            "redirectUri": self.redirect_uri,
            "scopes": list(self.scopes),
            "user": self.user_label or self.user,
            "resource": self.resource,
            "created": self.created,
            "lastUsed": self.last_used,
            "expires": self.refresh_expires,
        }


@dataclass
class Issued:
    """Tokens just made for a grant (the only time they exist in plain text)."""

    grant: Grant
    access_token: str
    access_expires: float
    access_scopes: list[str]
    refresh_token: str


class StoreError(Exception):
    """The grants file cannot be read or written (the message says where and why)."""


@dataclass(frozen=True)
class _State:
    """The file as last read: replaced whole, never changed, so readers need no lock."""

    stamp: tuple[int, int, int] | None = None
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    grants: dict[str, Grant] = field(default_factory=dict)
    #: Token digest -> (grant id, "access" | "refresh" | "spent").
    tokens: dict[str, tuple[str, str]] = field(default_factory=dict)


@dataclass
class _Work:
    """A change being made under the lock: copies of the clients and grants to change, and
    whether anything changed (nothing is written otherwise)."""

    clients: dict[str, dict[str, Any]]
    grants: dict[str, Grant]
    made: bool = True


class GrantStore:
    """The grants file: read when it changed, changed under its lock, replaced atomically.

    Safe to use from several threads. Reads take no lock while the file is unchanged (one
    ``stat``), so the event loop never waits for a change being written; changes take the
    lock, and are best made off the event loop (the provider does).
    """

    def __init__(self, path: Path | str | None = None, *, clock: Callable[[], float] = time.time):
        self.path = Path(path) if path else default_path()
        self.clock = clock
        self._guard = threading.RLock()
        self._state = _State()
        # Last uses seen by this process and not yet written (replaced whole when written).
        self._unsaved_uses: dict[str, float] = {}

    # -- reading ---------------------------------------------------------------------------

    def _current_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise StoreError(f"Cannot read {self.path}: {e}") from e
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def _current(self) -> _State:
        """The file's content as it is now (read again only when its stamp changed)."""
        state = self._state
        if self._current_stamp() == state.stamp:
            return state
        with self._guard:
            if self._current_stamp() != self._state.stamp:
                self._state = self._read()
            return self._state

    def _read(self) -> _State:
        stamp = self._current_stamp()
        data: dict[str, Any] = {}
        if stamp is not None:
            try:
                text = self.path.read_text(encoding="utf-8")
                data = json.loads(text) if text.strip() else {}
                if not isinstance(data, dict):
                    raise ValueError("not a JSON object")
            except (OSError, ValueError) as e:
                aside = self.path.with_name(f"{self.path.name}.unreadable-{int(time.time())}")
                log.error(
                    "jupyter_mcp: the OAuth grants file %s is unreadable (%s); moved it to %s "
                    "and starting with no grants",
                    self.path,
                    e,
                    aside,
                )
                with contextlib.suppress(OSError):
                    os.replace(self.path, aside)
                stamp, data = None, {}
            else:
                _tighten(self.path)
        clients = {k: v for k, v in (data.get("clients") or {}).items() if isinstance(v, dict)}
        grants: dict[str, Grant] = {}
        for key, value in (data.get("grants") or {}).items():
            try:
                grants[key] = Grant.from_json(value)
            except (TypeError, AttributeError):
                log.warning("jupyter_mcp: skipping a malformed grant %r in %s", key, self.path)
        tokens: dict[str, tuple[str, str]] = {}
        for grant in grants.values():
            for hashed in grant.access:
                tokens[hashed] = (grant.id, "access")
            if grant.refresh:
                tokens[grant.refresh] = (grant.id, "refresh")
            for hashed in grant.spent_refresh:
                tokens[hashed] = (grant.id, "spent")
        return _State(stamp, clients, grants, tokens)

    def grants(self, server: str | None = None) -> list[Grant]:
        """Every live grant (of ``server`` only, when given), oldest first, with the last uses
        this process saw."""
        state, now, uses = self._current(), self.clock(), self._unsaved_uses
        found = [
            dataclasses.replace(g, last_used=max(g.last_used or 0, uses.get(g.id, 0)) or None)
            for g in state.grants.values()
            if (server is None or g.server == server) and g.refresh_expires > now
        ]
        return sorted(found, key=lambda g: g.created)

    def grant(self, grant_id: str) -> Grant | None:
        """The grant ``grant_id``, if it still exists."""
        return self._current().grants.get(grant_id)

    def find(self, token: str) -> tuple[Grant, str] | None:
        """The grant a token belongs to and what the token is there (``access``, ``refresh``,
        or ``spent``: a refresh token rotated out), or None for a token no grant knows."""
        state = self._current()
        found = state.tokens.get(digest(token))
        if found is None:
            return None
        grant = state.grants.get(found[0])
        return None if grant is None else (grant, found[1])

    def client(self, client_id: str, server: str) -> dict[str, Any] | None:
        """The record of a client registered with ``server``."""
        record = self._current().clients.get(client_id)
        return record if record is not None and record.get("server") == server else None

    # -- changing --------------------------------------------------------------------------

    @contextlib.contextmanager
    def _changing(self) -> Iterator[_Work]:
        """Lock the file, read it as it is, let the caller change a copy, write that (unless
        the caller says it changed nothing)."""
        with self._guard:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            lock_path = self.path.with_name(self.path.name + ".lock")
            try:
                lock = os.fdopen(os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600), "r+")
            except OSError as e:
                raise StoreError(f"Cannot lock {lock_path}: {e}") from e
            try:
                if fcntl is not None:
                    fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
                state = self._current()
                work = _Work(copy.deepcopy(state.clients), copy.deepcopy(state.grants))
                yield work
                if work.made:
                    self._write(work)
            finally:
                lock.close()  # releases the lock

    def _write(self, work: _Work) -> None:
        now = self.clock()
        uses, self._unsaved_uses = self._unsaved_uses, {}
        for grant_id, when in uses.items():
            grant = work.grants.get(grant_id)
            if grant is not None and (grant.last_used or 0) < when:
                grant.last_used = when
        # Dead grants (their refresh token expired) are dropped. Expired access tokens stay
        # (two per grant at most) so that their next use can say they expired.
        grants = {g: grant for g, grant in work.grants.items() if grant.refresh_expires > now}
        data = {
            "version": VERSION,
            "clients": work.clients,
            "grants": {g: asdict(grant) for g, grant in grants.items()},
        }
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            with secure_write(str(temporary)) as f:
                json.dump(data, f, indent=1, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, self.path)
        except OSError as e:
            with contextlib.suppress(OSError):
                temporary.unlink()
            self._unsaved_uses.update(uses)  # to be written next time
            raise StoreError(f"Cannot write {self.path}: {e}") from e
        self._state = self._read()

    def add_grant(
        self,
        grant: Grant,
        *,
        access_lifetime: float,
        refresh_lifetime: float,
        client: dict[str, Any] | None = None,
    ) -> Issued:
        """Keep a new grant and make its first tokens; ``client`` is the record of the
        dynamically registered client it is for, kept from now on if it was not yet."""
        with self._changing() as work:
            if client is not None and client["client_id"] not in work.clients:
                self._keep_client(work, client)
            work.grants[grant.id] = grant
            return self._issue(grant, grant.scopes, access_lifetime, refresh_lifetime)

    @staticmethod
    def _keep_client(work: _Work, record: dict[str, Any]) -> None:
        clients = work.clients
        clients[record["client_id"]] = record
        if len(clients) > MAX_CLIENTS:
            used = {g.client_id for g in work.grants.values()}
            idle = sorted(
                (c for c in clients.values() if c["client_id"] not in used),
                key=lambda c: c.get("registered", 0),
            )
            for old in idle[: len(clients) - MAX_CLIENTS]:
                del clients[old["client_id"]]

    def rotate(
        self,
        grant_id: str,
        refresh_token: str,
        scopes: list[str],
        *,
        access_lifetime: float,
        refresh_lifetime: float,
    ) -> Issued | None:
        """New tokens for a grant in place of its refresh token (which is spent from now on):
        an access token with ``scopes`` (the grant's or fewer), a refresh token with the grant's
        own. None when that refresh token is not the grant's current one any more."""
        with self._changing() as work:
            grant = work.grants.get(grant_id)
            if grant is None or grant.refresh != digest(refresh_token):
                work.made = False
                return None
            grant.spent_refresh = [grant.refresh, *grant.spent_refresh][:SPENT_REFRESH_TOKENS]
            return self._issue(grant, scopes, access_lifetime, refresh_lifetime)

    def _issue(
        self, grant: Grant, scopes: list[str], access_lifetime: float, refresh_lifetime: float
    ) -> Issued:
        now = self.clock()
        access, refresh = new_token(ACCESS_PREFIX), new_token(REFRESH_PREFIX)
        # The newest access tokens made before stay, LIVE_ACCESS_TOKENS in all with this one.
        kept = sorted(grant.access.items(), key=lambda item: item[1]["expires"])
        kept = kept[len(kept) - (LIVE_ACCESS_TOKENS - 1) :] if LIVE_ACCESS_TOKENS > 1 else []
        expires = now + access_lifetime
        grant.access = {**dict(kept), digest(access): {"expires": expires, "scopes": list(scopes)}}
        grant.refresh = digest(refresh)
        grant.refresh_expires = now + refresh_lifetime
        return Issued(grant, access, expires, list(scopes), refresh)

    def revoke(self, grant_id: str) -> bool:
        """End a grant and every token of it; False when there was no such grant (and the
        file is left as it is)."""
        if self.grant(grant_id) is None:
            return False
        with self._changing() as work:
            work.made = work.grants.pop(grant_id, None) is not None
            return work.made

    def touch(self, grant_id: str) -> None:
        """Note a use of a grant now (written by the next change or :meth:`flush`)."""
        self._unsaved_uses[grant_id] = self.clock()

    def flush(self) -> None:
        """Write the last uses noted since the last write, if any."""
        if self._unsaved_uses:
            with self._changing():
                pass


def _tighten(path: Path) -> None:
    """Make a grants file that others could read the user's alone again, and say so."""
    if os.name != "posix":
        return
    try:
        mode = os.stat(path).st_mode & 0o777
        if mode & 0o077:
            os.chmod(path, 0o600)
            log.warning("jupyter_mcp: %s was readable by others (%o); now 0600", path, mode)
    except OSError:
        pass
