"""The authorization server behind the SDK's OAuth handlers, and the check of its tokens.

:class:`OAuthServer` is one per server: the grant store, the client metadata fetcher, the
authorization requests waiting for the user's answer and the codes not yet exchanged (both in
memory: they live minutes). :meth:`OAuthServer.provider` gives the SDK's
``OAuthAuthorizationServerProvider`` for one :class:`Site` — the address a request came to,
which is the issuer and, with ``/mcp``, the resource of the tokens made there.
:meth:`OAuthServer.authenticate` checks an access token presented at ``/mcp``.

Nothing here imports tornado: :mod:`.handlers` is the HTTP side.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any
from urllib.parse import unquote, urlsplit

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.shared.auth import (
    InvalidRedirectUriError,
    InvalidScopeError,
    OAuthClientInformationFull,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from pydantic import AnyUrl

from .client_metadata import (
    ClientMetadataError,
    ClientMetadataFetcher,
    is_loopback_host,
    is_metadata_url,
)
from .scopes import (
    BASE,
    Access,
    ScopeError,
    access_of,
    make_scopes,
    parse_scopes,
    supported_scopes,
)
from .store import Grant, GrantStore, Issued, digest

log = logging.getLogger("jupyter_mcp.auth")

#: Seconds an authorization code may wait for its exchange.
CODE_LIFETIME = 60.0
#: Seconds an authorization request may wait for the user's answer on the consent page.
CONSENT_LIFETIME = 600.0
#: Requests and codes held at most (each is a few hundred bytes; anyone can make requests).
MAX_PENDING = 1000
#: Dynamically registered clients kept (in memory) until their first grant; beyond it the
#: oldest go. Registration needs no login and any web page may send one, so a client is
#: written to the grants file only with its first grant: registrations alone cannot grow it.
MAX_UNGRANTED_CLIENTS = 1000
#: The largest registration kept, as JSON, and the most redirect URIs one may list.
MAX_REGISTRATION_BYTES = 4096
MAX_REDIRECT_URIS = 10
#: Where each endpoint is, under the issuer.
ENDPOINTS = {
    "authorize": "mcp/oauth/authorize",
    "token": "mcp/oauth/token",
    "register": "mcp/oauth/register",
    "revoke": "mcp/oauth/revoke",
    "consent": "mcp/oauth/consent",
}
_SCHEMES_NEVER_REDIRECTED_TO = {
    "javascript",
    "data",
    "file",
    "vbscript",
    "about",
    "blob",
    "ws",
    "wss",
}


class OAuthUnavailable(Exception):
    """OAuth cannot be offered for this request (the message says why and what to do)."""


class InvalidToken(Exception):
    """An access token refused at ``/mcp`` (the message is the ``error_description``)."""


def canonical_url(url: str) -> str:
    """``url`` in the form two URLs are compared in: scheme and host in lower case, no
    default port, the path decoded and without a trailing slash."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and (scheme, port) not in (("http", 80), ("https", 443)):
        host += f":{port}"
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme}://{host}{unquote(parts.path).rstrip('/')}{query}"


@dataclass(frozen=True)
class Site:
    """This server as one request reached it: the issuer, from which every URL is made."""

    issuer: str

    @property
    def resource(self) -> str:
        """The canonical URL of the MCP endpoint: the audience of the tokens made here."""
        return f"{self.issuer}/mcp"

    @property
    def resource_metadata_url(self) -> str:
        """Where the Protected Resource Metadata is (also under a prefix such as JupyterHub's)."""
        return f"{self.issuer}/.well-known/oauth-protected-resource/mcp"

    def endpoint(self, name: str) -> str:
        """The URL of an endpoint of :data:`ENDPOINTS`."""
        return f"{self.issuer}/{ENDPOINTS[name]}"

    def identifies(self, resource: str) -> bool:
        """Whether an RFC 8707 ``resource`` names this server (its MCP endpoint or its root)."""
        wanted = canonical_url(resource)
        return wanted in (canonical_url(self.resource), canonical_url(self.issuer))


def site_for(scheme: str, host: str, base_url: str, public_url: str = "") -> Site:
    """The :class:`Site` of a request to ``scheme://host`` under ``base_url``, or, when the
    server is reached through ``public_url`` (a tunnel or proxy), of that address.

    OAuth's endpoints are https wherever they are reached over a network; plain http is
    offered on this machine's own names (localhost, loopback addresses) only.
    """
    if public_url:
        parts = urlsplit(public_url)
        scheme, host, path = parts.scheme, parts.netloc, parts.path
    else:
        path = base_url
    scheme, host = scheme.lower(), host.lower()
    hostname = urlsplit(f"//{host}").hostname or ""
    if scheme != "https" and not (scheme == "http" and is_loopback_host(hostname)):
        raise OAuthUnavailable(
            f"OAuth is offered over https, or over http on this machine (localhost) only; this "
            f"request came over {scheme} to {host}. Put the server behind https (a tunnel, a "
            "reverse proxy, or ServerApp.certfile), and if the proxy terminates TLS let Jupyter "
            "know (ServerApp.trust_xheaders = True) or set c.JupyterMCP.oauth_public_url."
        )
    for default in (":80", ":443"):
        if host.endswith(default) and (scheme, default) in (("http", ":80"), ("https", ":443")):
            host = host[: -len(default)]
    return Site(issuer=f"{scheme}://{host}{path.rstrip('/')}")


def redirect_uri_problem(uri: str) -> str | None:
    """Why a client may not have ``uri`` as a redirect URI, or None when it may.

    https anywhere; http only to this machine (a native client's loopback listener); other
    schemes of native apps (``com.example.app:/callback``), but never ones a browser would
    run or read locally; never a fragment.
    """
    try:
        parts = urlsplit(uri)
    except ValueError:
        return f"redirect URI {uri!r} is not a URL"
    scheme = parts.scheme.lower()
    if not scheme:
        return f"redirect URI {uri!r} is not an absolute URL"
    if parts.fragment or uri.endswith("#"):
        return f"redirect URI {uri!r} must not contain a fragment"
    if scheme == "http" and not is_loopback_host(parts.hostname or ""):
        return (
            f"redirect URI {uri!r}: plain http is allowed only to this machine (localhost, "
            "127.0.0.1, [::1]); use https"
        )
    if scheme in _SCHEMES_NEVER_REDIRECTED_TO:
        return f"redirect URI {uri!r}: the scheme {scheme} cannot receive an authorization"
    if scheme == "https" and not parts.hostname:
        return f"redirect URI {uri!r} has no host"
    return None


def _is_loopback_redirect(uri: str) -> bool:
    parts = urlsplit(uri)
    return parts.scheme == "http" and is_loopback_host(parts.hostname or "")


def _without_port(uri: str) -> tuple[str, str, str, str]:
    parts = urlsplit(uri)
    return (parts.scheme, (parts.hostname or "").lower(), parts.path or "/", parts.query)


class ClientRecord(OAuthClientInformationFull):
    """A client as the SDK's handlers see it, with this server's rules for scopes and redirect
    URIs; ``registration`` says how it is known (``dynamic`` or ``metadata``)."""

    registration: str = "dynamic"

    def validate_scope(self, requested_scope: str | None) -> list[str] | None:
        """The requested scopes, checked and canonical (``mcp`` when none was asked)."""
        try:
            return parse_scopes((requested_scope or "").split())
        except ScopeError as e:
            raise InvalidScopeError(str(e)) from None

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        """Exactly one of the registered URIs, except that a loopback http redirect (a native
        client's listener) matches on any port, as RFC 8252 asks."""
        registered = [str(u) for u in self.redirect_uris or []]
        if redirect_uri is None:
            if len(registered) == 1:
                return AnyUrl(registered[0])
            raise InvalidRedirectUriError(
                "redirect_uri must be given: the client has more than one registered"
            )
        asked = str(redirect_uri)
        if asked in registered:
            return redirect_uri
        if _is_loopback_redirect(asked) and any(
            _is_loopback_redirect(r) and _without_port(r) == _without_port(asked)
            for r in registered
        ):
            return redirect_uri
        raise InvalidRedirectUriError(
            f"Redirect URI {asked!r} is not one of the client's: {', '.join(registered)}"
        )


@dataclass
class PendingAuthorization:
    """An authorization request waiting for the user's answer on the consent page."""

    id: str
    client: ClientRecord
    params: AuthorizationParams
    site: Site
    expires: float

    @property
    def requested(self) -> Access:
        return access_of(self.params.scopes or [BASE])


@dataclass
class _Code:
    code: AuthorizationCode
    site: Site
    client_name: str
    registration: str
    grant_types: list[str]
    expires: float
    user_label: str = ""


@dataclass
class _Spent:
    """A code already exchanged: the grant it made (revoked if the code comes again)."""

    grant_id: str
    until: float


class OAuthPrincipal(AuthenticatedUser):
    """Who an OAuth request acts for: one grant, as the SDK's user (sessions, result windows
    and cancellation compare it), with what its token may use."""

    def __init__(self, grant: Grant, scopes: list[str]):
        super().__init__(
            AccessToken(
                token="oauth",
                # One principal per grant: two grants of one client never share a session.
                client_id=f"oauth:{grant.id}",
                scopes=list(scopes),
                resource=grant.resource,
                subject=grant.user,
                claims={"iss": grant.issuer, "client_id": grant.client_id},
            )
        )
        self.grant = grant
        self.access = access_of(scopes)


@dataclass
class OAuthSettings:
    """The OAuth settings of the server (traits of ``JupyterMCP``)."""

    access_token_lifetime: float = 3600.0
    refresh_token_lifetime: float = 30 * 86400.0
    #: The longest a grant lasts from the consent, however often it is refreshed.
    grant_lifetime: float = 90 * 86400.0
    #: Under JupyterHub, whether users other than the server's owner (those it is shared
    #: with, admins) may allow clients here.
    consent_by_others: bool = False
    dynamic_registration: bool = True
    allow_insecure_client_metadata: bool = False
    public_url: str = ""


class OAuthServer:
    """The server's own authorization server (see the module docstring)."""

    def __init__(
        self,
        store: GrantStore,
        *,
        server_id: Callable[[], str],
        served_toolsets: Callable[[], frozenset[str]],
        settings: OAuthSettings | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.settings = settings or OAuthSettings()
        self._server_id = server_id
        self.served_toolsets = served_toolsets
        self.clock = clock
        store.clock = lambda: self.clock()
        self.fetcher = ClientMetadataFetcher(
            allow_insecure=self.settings.allow_insecure_client_metadata, clock=lambda: self.clock()
        )
        self._pending: dict[str, PendingAuthorization] = {}
        self._codes: dict[str, _Code] = {}
        self._spent: dict[str, _Spent] = {}
        #: Registered clients without a grant yet, oldest first (see MAX_UNGRANTED_CLIENTS).
        self._ungranted: dict[str, dict[str, Any]] = {}
        self._flusher: asyncio.Task[None] | None = None

    @property
    def server_id(self) -> str:
        """Which server this is, as grants record it (decided at the first use, once the
        server listens)."""
        return self._server_id()

    # -- lifetime ----------------------------------------------------------------------------

    def start(self) -> None:
        """Write last uses every minute (they are noted in memory on each request)."""
        if self._flusher is None:
            self._flusher = asyncio.get_running_loop().create_task(self._flush_every(60.0))

    async def _flush_every(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await asyncio.to_thread(self.store.flush)
            except Exception:  # a full disk must not stop the server; the next minute retries
                log.warning("jupyter_mcp: writing OAuth last uses failed", exc_info=True)

    async def aclose(self) -> None:
        """Write what is left and stop."""
        if self._flusher is not None:
            self._flusher.cancel()
            self._flusher = None
        self.fetcher.close()
        await asyncio.to_thread(self.store.flush)

    # -- metadata --------------------------------------------------------------------------

    def resource_metadata(self, site: Site) -> ProtectedResourceMetadata:
        """RFC 9728 metadata of the MCP endpoint at ``site``."""
        # Validated by the models themselves, whose URLs keep an empty path as it is: an
        # issuer is compared as a string, "https://host" is not "https://host/".
        return ProtectedResourceMetadata.model_validate(
            {
                "resource": site.resource,
                "authorization_servers": [site.issuer],
                # The least a client needs; the consent page offers the narrower ones.
                "scopes_supported": [BASE],
                "bearer_methods_supported": ["header"],
                "resource_name": "Jupyter server (jupyter-mcp IDE tools)",
            }
        )

    def authorization_server_metadata(self, site: Site) -> OAuthMetadata:
        """RFC 8414 metadata of the authorization server at ``site``."""
        auth_methods = ["none", "client_secret_post", "client_secret_basic"]
        return OAuthMetadata.model_validate(
            {
                "issuer": site.issuer,
                "authorization_endpoint": site.endpoint("authorize"),
                "token_endpoint": site.endpoint("token"),
                "registration_endpoint": (
                    site.endpoint("register") if self.settings.dynamic_registration else None
                ),
                "revocation_endpoint": site.endpoint("revoke"),
                "scopes_supported": supported_scopes(self.served_toolsets()),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_methods_supported": auth_methods,
                "revocation_endpoint_auth_methods_supported": auth_methods,
                "code_challenge_methods_supported": ["S256"],
                "client_id_metadata_document_supported": True,
                "authorization_response_iss_parameter_supported": True,
            }
        )

    def issuer_string(self, site: Site) -> str:
        """The issuer exactly as the metadata writes it (``iss`` is compared as a string)."""
        return str(self.authorization_server_metadata(site).issuer)

    # -- clients ---------------------------------------------------------------------------

    async def resolve_client(self, client_id: str) -> ClientRecord:
        """The client of a metadata document URL, fetched and checked now (or cached), or a
        :class:`ClientMetadataError` that says what is wrong with it."""
        metadata = await self.fetcher.get(client_id)
        document = metadata.document
        for uri in document["redirect_uris"]:
            problem = redirect_uri_problem(uri)
            if problem:
                raise ClientMetadataError(f"The client metadata at {client_id}: {problem}")
        try:
            return ClientRecord(
                client_id=client_id,
                client_name=document["client_name"],
                redirect_uris=document["redirect_uris"],
                grant_types=document.get("grant_types") or ["authorization_code", "refresh_token"],
                response_types=document.get("response_types") or ["code"],
                token_endpoint_auth_method="none",
                client_uri=document.get("client_uri"),
                logo_uri=document.get("logo_uri"),
                registration="metadata",
            )
        except ValueError as e:  # pydantic: a URL field that is not one
            raise ClientMetadataError(
                f"The client metadata at {client_id} is invalid: {e}"
            ) from None

    async def client(self, client_id: str) -> ClientRecord | None:
        """A client by its id: a metadata document's, or one registered with this server."""
        if is_metadata_url(client_id):
            try:
                return await self.resolve_client(client_id)
            except ClientMetadataError as e:
                # The token and revocation endpoints need no more than the client's kind;
                # when its document cannot be had now, what its grants remember will do.
                for grant in self.store.grants(self.server_id):
                    if grant.client_id == client_id:
                        return ClientRecord(
                            client_id=client_id,
                            client_name=grant.client_name,
                            redirect_uris=[AnyUrl(grant.redirect_uri)],
                            grant_types=grant.grant_types,
                            token_endpoint_auth_method="none",
                            registration="metadata",
                        )
                log.info("jupyter_mcp: client %s unusable: %s", client_id, e)
                return None
        record = self.store.client(client_id, self.server_id) or self._ungranted.get(client_id)
        if record is None:
            return None
        return ClientRecord.model_validate({**record, "registration": "dynamic"})

    async def register(self, client: OAuthClientInformationFull) -> None:
        """Keep a dynamically registered client (in memory until its first grant), refused
        with the RFC 7591 error when it is too large or its redirect URIs or scopes are not
        acceptable."""
        if len(client.redirect_uris or []) > MAX_REDIRECT_URIS:
            raise RegistrationError(
                "invalid_client_metadata",
                f"A client may register {MAX_REDIRECT_URIS} redirect URIs at most",
            )
        for uri in client.redirect_uris or []:
            problem = redirect_uri_problem(str(uri))
            if problem:
                raise RegistrationError("invalid_redirect_uri", problem)
        if client.scope:
            try:
                parse_scopes(client.scope.split())
            except ScopeError as e:
                raise RegistrationError("invalid_client_metadata", str(e)) from None
        record = client.model_dump(mode="json", exclude_none=True)
        size = len(json.dumps(record))
        if size > MAX_REGISTRATION_BYTES:
            raise RegistrationError(
                "invalid_client_metadata",
                f"The registration is {size} bytes as JSON; at most {MAX_REGISTRATION_BYTES} "
                "are kept",
            )
        self._ungranted[record["client_id"]] = {
            **record,
            "server": self.server_id,
            "registered": self.clock(),
        }
        while len(self._ungranted) > MAX_UNGRANTED_CLIENTS:
            del self._ungranted[next(iter(self._ungranted))]

    # -- the authorization request and the user's answer -----------------------------------

    def begin(self, site: Site, client: ClientRecord, params: AuthorizationParams) -> str:
        """Keep an authorization request for the consent page; the page's URL."""
        if params.resource is not None and not site.identifies(params.resource):
            raise AuthorizeError(
                "invalid_target",
                f"resource {params.resource} is not this server; its MCP endpoint is "
                f"{site.resource}",
            )
        requested = access_of(params.scopes or [BASE])
        served = self.served_toolsets()
        if requested.toolsets is not None and not requested.toolsets & served:
            raise AuthorizeError(
                "invalid_scope",
                f"This server serves none of the tool sets asked for "
                f"({', '.join(sorted(requested.toolsets))}); it serves {', '.join(sorted(served))}",
            )
        now = self.clock()
        self._drop_expired(now)
        request_id = secrets.token_urlsafe(24)
        self._pending[request_id] = PendingAuthorization(
            request_id, client, params, site, now + CONSENT_LIFETIME
        )
        return f"{site.endpoint('consent')}?request={request_id}"

    def pending(self, request_id: str, site: Site) -> PendingAuthorization | None:
        """The request a consent page shows, if it still waits (and was made at this site)."""
        self._drop_expired(self.clock())
        found = self._pending.get(request_id)
        return found if found is not None and found.site == site else None

    def consent_refused(self, user: str) -> str | None:
        """Why ``user`` may not allow clients on this server, or None when they may.

        Under JupyterHub others than the server's owner may reach it (a share, an admin with
        ``access:servers``); a grant they made would let a client act as the owner, for as
        long as it is refreshed. Only the owner (``$JUPYTERHUB_USER``) allows, unless the
        ``consent_by_others`` setting says otherwise.
        """
        owner = os.environ.get("JUPYTERHUB_USER", "")
        if not owner or self.settings.consent_by_others or user == owner:
            return None
        return (
            f"Only {owner}, whose server this is, can allow clients to use it or revoke their "
            f"grants; you are signed in as {user}. (The server's "
            "c.JupyterMCP.oauth_allow_consent_by_others setting lets others.)"
        )

    def decide(
        self,
        request_id: str,
        site: Site,
        user: str,
        *,
        allow: bool,
        read_only: bool = False,
        toolsets: frozenset[str] | None = None,
        user_label: str = "",
    ) -> str:
        """The user's answer to a request: the URL the browser goes back to the client with.

        ``read_only`` and ``toolsets`` narrow what the client asked for; they never widen it.
        A :class:`ValueError` says what is wrong with the answer (nothing is changed then).
        """
        found = self.pending(request_id, site)
        if found is None:
            raise ValueError(
                "This authorization request is unknown or has expired (it waits 10 minutes): "
                "start again from the client"
            )
        params = found.params
        back = str(params.redirect_uri)
        issuer = self.issuer_string(site)
        if not allow:
            del self._pending[request_id]
            return construct_redirect_uri(
                back,
                error="access_denied",
                error_description="The user did not allow the access",
                state=params.state,
                iss=issuer,
            )
        refused = self.consent_refused(user)
        if refused is not None:
            raise ValueError(refused)
        requested = found.requested
        offered = requested.toolsets if requested.toolsets is not None else self.served_toolsets()
        if toolsets is not None:
            if not toolsets:
                raise ValueError("Choose at least one tool set")
            if not toolsets <= offered:
                extra = ", ".join(sorted(toolsets - offered))
                raise ValueError(f"The client did not ask for the tool sets {extra}")
        narrowed = toolsets if toolsets is not None and toolsets != offered else requested.toolsets
        chosen = Access(read_only=read_only or requested.read_only, toolsets=narrowed)
        scopes = make_scopes(
            chosen.read_only, chosen.toolsets, base=BASE in (params.scopes or [BASE])
        )
        del self._pending[request_id]
        code = secrets.token_urlsafe(32)
        now = self.clock()
        self._codes[digest(code)] = _Code(
            code=AuthorizationCode(
                code=code,
                scopes=scopes,
                expires_at=now + CODE_LIFETIME,
                client_id=found.client.client_id,
                code_challenge=params.code_challenge,
                redirect_uri=params.redirect_uri,
                redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
                resource=site.resource,
                subject=user,
            ),
            site=site,
            client_name=found.client.client_name or found.client.client_id,
            registration=found.client.registration,
            grant_types=list(found.client.grant_types),
            expires=now + CODE_LIFETIME,
            user_label=user_label,
        )
        return construct_redirect_uri(back, code=code, state=params.state, iss=issuer)

    def _drop_expired(self, now: float) -> None:
        for table in (self._pending, self._codes):
            for key in [k for k, v in table.items() if v.expires <= now]:
                del table[key]
            while len(table) >= MAX_PENDING:
                del table[next(iter(table))]
        for key in [k for k, v in self._spent.items() if v.until <= now]:
            del self._spent[key]

    # -- the token endpoint ----------------------------------------------------------------

    async def replayed(self, grant_type: str, value: str) -> str | None:
        """When a code or a refresh token comes again after it was used, the grant made with
        it is revoked (someone else may hold it: RFC 6749 10.5, OAuth 2.1 4.3.1) and this says
        so; None for anything else."""
        if grant_type == "authorization_code":
            spent = self._spent.get(digest(value))
            if spent is None:
                return None
            await self.revoke(spent.grant_id)
            return (
                "This authorization code was already exchanged; the tokens issued for it are "
                "revoked now, since someone else may hold the code"
            )
        if grant_type == "refresh_token":
            found = self.store.find(value)
            if found is None or found[1] != "spent":
                return None
            await self.revoke(found[0].id)
            return (
                "This refresh token was already used (each is good once); the grant is revoked "
                "now, since someone else may hold it: authorize again"
            )
        return None

    def load_code(self, site: Site, code: str) -> AuthorizationCode | None:
        """A code not yet exchanged (made at ``site``), with the time left on it."""
        found = self._codes.get(digest(code))
        if found is None or found.site != site:
            return None
        left = found.expires - self.clock()
        # The SDK compares with the wall clock; the time left is this server's clock's.
        return found.code.model_copy(update={"expires_at": time.time() + left if left > 0 else 0})

    async def exchange_code(
        self, site: Site, client: OAuthClientInformationFull, code: AuthorizationCode
    ) -> OAuthToken:
        """A new grant and its first tokens for a code the SDK checked (PKCE, redirect URI)."""
        found = self._codes.pop(digest(code.code), None)
        if found is None:
            raise TokenError("invalid_grant", "This authorization code was already exchanged")
        refresh = "refresh_token" in found.grant_types
        grant = Grant(
            id="g" + secrets.token_hex(8),
            client_id=client.client_id,
            client_name=found.client_name,
            registration=found.registration,
            redirect_uri=str(code.redirect_uri),
            scopes=list(code.scopes),
            user=code.subject or "",
            user_label=found.user_label,
            resource=site.resource,
            issuer=site.issuer,
            server=self.server_id,
            created=self.clock(),
            grant_types=found.grant_types,
        )
        lifetime, refresh_lifetime = self._lifetimes(grant)
        issued = await asyncio.to_thread(
            self.store.add_grant,
            grant,
            access_lifetime=lifetime,
            refresh_lifetime=refresh_lifetime if refresh else lifetime,
            # A registered client is written with its first grant (see register).
            client=self._ungranted.get(client.client_id),
        )
        self._ungranted.pop(client.client_id, None)
        self._spent[digest(code.code)] = _Spent(grant.id, self.clock() + 10 * CODE_LIFETIME)
        log.info(
            "jupyter_mcp: %s allowed %s (%s) the scopes %s",
            grant.user,
            grant.client_name,
            grant.client_id,
            " ".join(grant.scopes),
        )
        return _token_answer(issued, lifetime, refresh)

    def load_refresh(self, site: Site, token: str) -> RefreshToken | None:
        """The refresh token of a grant of this server made at ``site``."""
        found = self.store.find(token)
        if found is None or found[1] != "refresh":
            return None
        grant = found[0]
        if grant.server != self.server_id or grant.issuer != site.issuer:
            return None
        left = grant.refresh_expires - self.clock()
        return RefreshToken(
            token=token,
            client_id=grant.client_id,
            scopes=list(grant.scopes),
            expires_at=int(time.time() + left) if left > 0 else 1,
            resource=grant.resource,
            subject=grant.user,
        )

    async def exchange_refresh(self, refresh: RefreshToken, scopes: list[str]) -> OAuthToken:
        """New tokens for a refresh token; the old one is spent. ``scopes`` may ask for less
        than the grant, never for more (dropping ``mcp:read`` would be more)."""
        found = self.store.find(refresh.token)
        if found is None or found[1] != "refresh":
            raise TokenError("invalid_grant", "This refresh token is not valid any more")
        grant = found[0]
        try:
            asked = parse_scopes(scopes)
        except ScopeError as e:
            raise TokenError("invalid_scope", str(e)) from None
        granted = access_of(grant.scopes)
        if not access_of(asked).within(granted):
            raise TokenError(
                "invalid_scope",
                f"The grant allows {granted.describe()} ({' '.join(grant.scopes)}); a refreshed "
                f"token cannot have more ({' '.join(asked)})",
            )
        lifetime, refresh_lifetime = self._lifetimes(grant)
        if refresh_lifetime <= 0:
            raise TokenError(
                "invalid_grant",
                f"This grant has reached its end ({self.settings.grant_lifetime / 86400:g} days "
                "after the user allowed it, however often it is refreshed): authorize again",
            )
        issued = await asyncio.to_thread(
            self.store.rotate,
            grant.id,
            refresh.token,
            asked,
            access_lifetime=lifetime,
            refresh_lifetime=refresh_lifetime,
        )
        if issued is None:
            raise TokenError("invalid_grant", "This refresh token was already used")
        return _token_answer(issued, lifetime, True)

    def _lifetimes(self, grant: Grant) -> tuple[float, float]:
        """How long the next access and refresh tokens of ``grant`` last: as the settings say,
        and never past the grant's end (its creation plus ``grant_lifetime``), so that a
        client refreshing forever does not keep a consent (a share, an admin's) forever."""
        left = grant.created + self.settings.grant_lifetime - self.clock()
        return (
            min(self.settings.access_token_lifetime, max(left, 0.0)),
            min(self.settings.refresh_token_lifetime, left),
        )

    # -- the resource: /mcp ----------------------------------------------------------------

    def authenticate(self, token: str, site: Site) -> OAuthPrincipal:
        """The principal of an access token presented at ``site``'s MCP endpoint, or an
        :class:`InvalidToken` saying why it is refused."""
        found = self.store.find(token)
        if found is None:
            raise InvalidToken("The access token is unknown here, or was revoked")
        grant, kind = found
        if kind != "access":
            raise InvalidToken("This is a refresh token; send the access token")
        if grant.server != self.server_id:
            raise InvalidToken("The access token was issued by another Jupyter server")
        if canonical_url(grant.resource) != canonical_url(site.resource):
            raise InvalidToken(
                f"The access token is for {grant.resource}, not for this server ({site.resource})"
            )
        entry = grant.access[digest(token)]
        if entry["expires"] <= self.clock():
            when = datetime.fromtimestamp(entry["expires"], timezone.utc).isoformat(
                timespec="seconds"
            )
            raise InvalidToken(f"The access token expired at {when}; refresh it")
        self.store.touch(grant.id)
        return OAuthPrincipal(grant, entry["scopes"])

    # -- the user's grants -------------------------------------------------------------------

    def grants(self) -> list[Grant]:
        """The live grants of this server, oldest first."""
        return self.store.grants(self.server_id)

    async def revoke(self, grant_id: str) -> bool:
        """End a grant and its tokens (their next request fails); False if there was none."""
        revoked = await asyncio.to_thread(self.store.revoke, grant_id)
        if revoked:
            log.info("jupyter_mcp: OAuth grant %s revoked", grant_id)
        return revoked

    def provider(self, site: Site) -> SiteProvider:
        """The SDK's provider interface at ``site``."""
        return SiteProvider(self, site)


def _token_answer(issued: Issued, lifetime: float, refresh: bool) -> OAuthToken:
    return OAuthToken(
        access_token=issued.access_token,
        token_type="Bearer",
        expires_in=int(lifetime),
        scope=" ".join(issued.access_scopes),
        refresh_token=issued.refresh_token if refresh else None,
    )


@dataclass
class SiteProvider:
    """``OAuthAuthorizationServerProvider`` (the SDK's) of :class:`OAuthServer` at one site."""

    server: OAuthServer
    site: Site

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return await self.server.client(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        await self.server.register(client_info)

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        assert isinstance(client, ClientRecord)  # get_client makes only these
        return self.server.begin(self.site, client, params)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.server.load_code(self.site, authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        return await self.server.exchange_code(self.site, client, authorization_code)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.server.load_refresh(self.site, refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        return await self.server.exchange_refresh(refresh_token, scopes)

    async def load_access_token(self, token: str) -> AccessToken | None:
        try:
            return self.server.authenticate(token, self.site).access_token
        except InvalidToken:
            return None

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        found = self.server.store.find(token.token)
        if found is not None:
            await self.server.revoke(found[0].id)

    async def exchange_identity_assertion(self, client: Any, params: Any) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "This server does not take identity assertions")
