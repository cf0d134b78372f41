"""The HTTP side of OAuth: metadata, the SDK's endpoints under Tornado, the consent page, grants.

| route (under ``base_url``) | what | auth |
|---|---|---|
| ``.well-known/oauth-protected-resource[/mcp]`` | RFC 9728 metadata of ``/mcp`` | none |
| ``.well-known/oauth-authorization-server`` | RFC 8414 metadata | none |
| ``.well-known/openid-configuration`` | the same, where OpenID clients look | none |
| ``mcp/oauth/authorize`` | the SDK's authorization endpoint (to the consent page) | none |
| ``mcp/oauth/token`` | the SDK's token endpoint | client |
| ``mcp/oauth/register`` | the SDK's registration endpoint | none |
| ``mcp/oauth/revoke`` | RFC 7009 revocation (public clients by ``client_id`` alone) | client |
| ``mcp/oauth/consent`` | the page where the user allows or denies | Jupyter's login |
| ``mcp/oauth/grants[/<id>]`` | the user's grants: list, revoke | Jupyter's login |

The SDK's handlers are Starlette endpoints; :func:`run_asgi` serves one for a Tornado request
with the ASGI adapter of the MCP endpoint. Under JupyterHub's ``/user/<name>/`` the host's root
belongs to the hub, so only what is under the prefix is reachable: the resource metadata URL
that the 401 names, and the OpenID-style ``<issuer>/.well-known/openid-configuration``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import jinja2
from jupyter_server.auth.decorator import allow_unauthenticated, authorized
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.routes import cors_middleware
from mcp.server.auth.settings import ClientRegistrationOptions
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from tornado import web

from ..core.toolsets import TOOLSETS
from ..surfaces.asgi import ASGIApp, serve_asgi
from .client_metadata import ClientMetadataError, is_loopback_host, is_metadata_url
from .identity import site_of
from .provider import OAuthServer, OAuthUnavailable, Site
from .scopes import access_of

#: The consent page's one script: Allow works only once the page has been in front (visible
#: and focused) for a moment, and stops working again the moment it is not. Against double-
#: clickjacking: a page that swaps the consent page in (or uncovers it) between the two
#: clicks of a double-click would have the second click land on Allow, which framing rules
#: cannot stop (the page is a top window). Without scripts the button simply works.
CONSENT_SCRIPT = """
(function () {
  var allow = document.getElementById("allow");
  var timer = null;
  function hold() {
    allow.disabled = true;
    if (timer !== null) { clearTimeout(timer); timer = null; }
  }
  function arm() {
    if (document.visibilityState !== "visible" || !document.hasFocus()) { hold(); return; }
    if (allow.disabled && timer === null) {
      timer = setTimeout(function () { timer = null; allow.disabled = false; }, 700);
    }
  }
  hold();
  window.addEventListener("blur", hold);
  window.addEventListener("focus", arm);
  window.addEventListener("pointermove", arm);
  window.addEventListener("keydown", arm);
  document.addEventListener("visibilitychange", function () { hold(); arm(); });
  arm();
})();
"""
_CONSENT_SCRIPT_SOURCE = "'sha256-{}'".format(
    base64.b64encode(hashlib.sha256(CONSENT_SCRIPT.encode("utf-8")).digest()).decode("ascii")
)
#: Largest body an OAuth endpoint reads (forms and registrations are small).
MAX_BODY = 64 * 1024
_TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)


async def run_asgi(handler: APIHandler, app: ASGIApp) -> None:
    """Serve one Tornado request with an ASGI app (the SDK's endpoints)."""
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in handler.request.headers.get_all()
    ]
    await serve_asgi(handler, app, headers=headers, disconnected=asyncio.Event())


def errors_as_page(app: ASGIApp, issuer: str) -> ASGIApp:
    """``app`` (the SDK's authorization endpoint) with its error redirects turned into a page.

    Once the client and its redirect URI are known, the SDK sends errors (an unknown scope, no
    PKCE, a foreign resource) back to the client with a redirect. Nobody has logged in at
    that point, and anyone can register a client with any https redirect URI, so that would
    make this server an open redirector (RFC 9700 §4.11.2): a link on the lab's or hub's
    domain that lands the user on any site. The error is shown instead, with its RFC code and
    description, and a link back to the client that the user may follow; the link carries
    ``iss`` (RFC 9207: a client checks it on error responses too).
    """

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        refused: list[dict[str, str]] = []

        async def send_page(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] in (302, 303):
                location = _error_location(message["headers"], issuer)
                if location is not None:
                    refused.append(location)
                    return
            if refused and message["type"] == "http.response.body":
                if message.get("more_body"):
                    return
                page = _TEMPLATES.get_template("authorize_error.html").render(**refused[0])
                body = page.encode("utf-8")
                await send(
                    {
                        "type": "http.response.start",
                        "status": 400,
                        "headers": [
                            (b"content-type", b"text/html; charset=UTF-8"),
                            (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store"),
                            (b"x-frame-options", b"DENY"),
                            (b"referrer-policy", b"no-referrer"),
                            (
                                b"content-security-policy",
                                b"default-src 'none'; style-src 'unsafe-inline'; "
                                b"frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
                            ),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        await app(scope, receive, send_page)

    return wrapped


def _error_location(headers: list[tuple[bytes, bytes]], issuer: str) -> dict[str, str] | None:
    """What the error page of an error redirect shows (None for a redirect that is no error:
    the one to the consent page)."""
    for header in headers:
        if header[0].lower() != b"location":
            continue
        location = _add_issuer(header, issuer)[1].decode("latin-1")
        parts = urlsplit(location)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        if "error" not in query:
            return None
        return {
            "error": query["error"],
            "description": query.get("error_description", ""),
            "back": location,
            "client_host": parts.netloc or parts.scheme,
        }
    return None


def _add_issuer(header: tuple[bytes, bytes], issuer: str) -> tuple[bytes, bytes]:
    name, value = header
    if name.lower() != b"location":
        return header
    parts = urlsplit(value.decode("latin-1"))
    query = parse_qsl(parts.query, keep_blank_values=True)
    if not any(k == "error" for k, _ in query) or any(k == "iss" for k, _ in query):
        return header
    location = urlunsplit(parts._replace(query=urlencode([*query, ("iss", issuer)])))
    return name, location.encode("latin-1")


def oauth_error(handler: web.RequestHandler, status: int, error: str, description: str) -> None:
    """Finish with an RFC 6749 error body."""
    handler.set_status(status)
    handler.set_header("Content-Type", "application/json")
    handler.set_header("Cache-Control", "no-store")
    handler.finish(json.dumps({"error": error, "error_description": description}))


class OAuthHandlerMixin(ExtensionHandlerMixin):
    """What the OAuth routes are given: the server's :class:`OAuthServer`."""

    oauth: OAuthServer

    def initialize(self, name: str, *args: Any, oauth: OAuthServer, **kwargs: Any) -> None:
        self.oauth = oauth
        super().initialize(name, *args, **kwargs)

    @property
    def site(self) -> Site:
        """Where this request came; a 400 with the reason when OAuth is not offered there."""
        try:
            return site_of(self, self.oauth)
        except OAuthUnavailable as e:
            raise web.HTTPError(400, "%s", str(e)) from None


class OAuthEndpointHandler(OAuthHandlerMixin, APIHandler):
    """An endpoint OAuth clients call without a Jupyter login: no XSRF and any origin (no
    cookie is a credential here; the SDK's CORS answers browsers), JSON errors, a small body."""

    #: The methods the endpoint answers (CORS says them to browsers).
    methods: tuple[str, ...] = ("POST", "OPTIONS")

    def endpoint(self) -> Callable[[Request], Awaitable[Response]]:
        """The SDK endpoint this route serves (a Starlette request handler), for this request."""
        raise NotImplementedError

    def check_xsrf_cookie(self) -> None:
        """Nothing to check: these endpoints take no cookie as a credential."""

    def check_origin(self, origin_to_satisfy_tornado: str = "") -> bool:
        """Any origin: clients in a browser call these (the SDK's CORS headers say so)."""
        return True

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Refusals of the HTTP layer as RFC 6749 errors."""
        exc = kwargs.get("exc_info", (None, None, None))[1]
        reason = self._reason
        if isinstance(exc, web.HTTPError) and exc.log_message:
            reason = exc.log_message % exc.args if exc.args else exc.log_message
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"error": "invalid_request", "error_description": reason}))

    async def serve(self) -> None:
        """Run the SDK endpoint, with CORS for clients that run in a browser."""
        if len(self.request.body or b"") > MAX_BODY:
            oauth_error(self, 413, "invalid_request", f"The request body is over {MAX_BODY} bytes")
            return
        self.site  # noqa: B018 - refuse now (400) when OAuth is not offered here
        app = cors_middleware(self.endpoint(), list(self.methods))
        await run_asgi(self, app)

    @allow_unauthenticated
    async def options(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """A browser's CORS preflight (the SDK's CORS middleware answers it)."""
        await self.serve()


class ResourceMetadataHandler(OAuthEndpointHandler):
    """``GET .well-known/oauth-protected-resource[/mcp]``: the MCP endpoint's metadata."""

    methods = ("GET", "OPTIONS")

    def endpoint(self) -> Callable[[Request], Awaitable[Response]]:
        return ProtectedResourceMetadataHandler(self.oauth.resource_metadata(self.site)).handle

    @allow_unauthenticated
    async def get(self) -> None:
        await self.serve()


class AuthorizationServerMetadataHandler(OAuthEndpointHandler):
    """``GET .well-known/oauth-authorization-server`` (and ``openid-configuration``)."""

    methods = ("GET", "OPTIONS")

    def endpoint(self) -> Callable[[Request], Awaitable[Response]]:
        return MetadataHandler(self.oauth.authorization_server_metadata(self.site)).handle

    @allow_unauthenticated
    async def get(self) -> None:
        await self.serve()


class AuthorizeHandler(OAuthEndpointHandler):
    """``mcp/oauth/authorize``: the SDK checks the request and sends the browser on to the
    consent page. A client metadata URL is fetched first, so that a bad one is answered with
    what is wrong with it (and never with a redirect to a URI of a client nobody knows); any
    other refusal is a page too, never a redirect (see :func:`errors_as_page`)."""

    methods = ("GET", "POST")

    def endpoint(self) -> Callable[[Request], Awaitable[Response]]:
        return AuthorizationHandler(self.oauth.provider(self.site)).handle

    async def _authorize(self) -> None:
        client_id = self.get_argument("client_id", "")
        if is_metadata_url(client_id):
            try:
                await self.oauth.resolve_client(client_id)
            except ClientMetadataError as e:
                oauth_error(self, 400, "invalid_client", str(e))
                return
        site = self.site
        app = errors_as_page(
            cors_middleware(self.endpoint(), list(self.methods)), self.oauth.issuer_string(site)
        )
        await run_asgi(self, app)

    @allow_unauthenticated
    async def get(self) -> None:
        await self._authorize()

    @allow_unauthenticated
    async def post(self) -> None:
        await self._authorize()


class TokenEndpointHandler(OAuthEndpointHandler):
    """``POST mcp/oauth/token``: the SDK's token endpoint (code with PKCE, refresh), after the
    checks it leaves to the server: the ``resource`` (RFC 8707) and a code or refresh token
    that comes a second time."""

    def endpoint(self) -> Callable[[Request], Awaitable[Response]]:
        provider = self.oauth.provider(self.site)
        return TokenHandler(provider, ClientAuthenticator(provider)).handle

    @allow_unauthenticated
    async def post(self) -> None:
        site = self.site
        resource = self.get_body_argument("resource", None)
        if resource is not None and not site.identifies(resource):
            oauth_error(
                self,
                400,
                "invalid_target",
                f"resource {resource} is not this server; its MCP endpoint is {site.resource}",
            )
            return
        grant_type = self.get_body_argument("grant_type", "")
        value = self.get_body_argument(
            "code" if grant_type == "authorization_code" else "refresh_token", ""
        )
        replayed = await self.oauth.replayed(grant_type, value) if value else None
        if replayed is not None:
            oauth_error(self, 400, "invalid_grant", replayed)
            return
        await self.serve()


class RegistrationEndpointHandler(OAuthEndpointHandler):
    """``POST mcp/oauth/register``: Dynamic Client Registration (RFC 7591), by the SDK."""

    def endpoint(self) -> Callable[[Request], Awaitable[Response]]:
        return RegistrationHandler(
            self.oauth.provider(self.site), options=ClientRegistrationOptions(enabled=True)
        ).handle

    @allow_unauthenticated
    async def post(self) -> None:
        # RFC 7591 registrations are JSON. A web page may post text/plain cross-site without
        # a CORS preflight; insisting on the JSON type makes a browser ask first.
        kind = self.request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            oauth_error(
                self,
                400,
                "invalid_client_metadata",
                f"A registration is sent as application/json, not {kind or 'no content type'}",
            )
            return
        await self.serve()


class RevocationEndpointHandler(OAuthEndpointHandler):
    """``POST mcp/oauth/revoke`` (RFC 7009). The client is authenticated as at the token
    endpoint (the SDK's authenticator): a public client by its ``client_id`` alone."""

    def endpoint(self) -> Callable[[Request], Awaitable[Response]]:
        provider = self.oauth.provider(self.site)
        authenticator = ClientAuthenticator(provider)
        oauth = self.oauth

        async def revoke(request: Request) -> Response:
            no_store = {"Cache-Control": "no-store", "Pragma": "no-cache"}
            try:
                client = await authenticator.authenticate_request(request)
            except AuthenticationError as e:
                return _json(401, "invalid_client", e.message, no_store)
            form = await request.form()
            token = form.get("token")
            if not isinstance(token, str) or not token:
                return _json(400, "invalid_request", "The token to revoke is missing", no_store)
            found = oauth.store.find(token)
            if found is not None:
                if found[0].client_id != client.client_id:
                    return _json(
                        400,
                        "unauthorized_client",
                        "This token was not issued to this client",
                        no_store,
                    )
                await oauth.revoke(found[0].id)
            # An unknown token is revoked already, as far as its holder can tell (RFC 7009 2.2).
            return Response(status_code=200, headers=no_store)

        return revoke

    @allow_unauthenticated
    async def post(self) -> None:
        await self.serve()


def _json(status: int, error: str, description: str, headers: dict[str, str]) -> Response:
    body = {"error": error, "error_description": description}
    return JSONResponse(body, status_code=status, headers=headers)


class ConsentHandler(OAuthHandlerMixin, JupyterHandler):
    """``mcp/oauth/consent?request=…``: behind Jupyter's login (under JupyterHub, the hub's),
    the page that names the client and what it asks, and where the user allows (possibly
    less) or denies. A post needs the page's XSRF token, and the page cannot be framed."""

    auth_resource = "mcp"

    @property
    def content_security_policy(self) -> str:
        """No framing, no script, forms only to here and back to the client."""
        targets = ["'self'"]
        back = getattr(self, "_redirect_target", None)
        if back:
            targets.append(back)
        return (
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
            f"script-src {_CONSENT_SCRIPT_SOURCE}; "
            f"form-action {' '.join(targets)}; frame-ancestors 'none'; base-uri 'none'"
        )

    def set_default_headers(self) -> None:
        super().set_default_headers()
        self.set_header("X-Frame-Options", "DENY")
        self.set_header("Cache-Control", "no-store")
        # Not no-referrer: browsers then post the form with "Origin: null", which Jupyter
        # refuses. same-origin sends nothing to the client when the browser goes back to it.
        self.set_header("Referrer-Policy", "same-origin")

    def _pending(self) -> Any:
        request_id = self.get_argument("request", "")
        found = self.oauth.pending(request_id, self.site) if request_id else None
        if found is None:
            raise web.HTTPError(
                400,
                "This authorization request is unknown or has expired (it waits 10 minutes): "
                "start again from the client",
            )
        # The policy was set before the request was known; now it can name the client.
        self._redirect_target = _form_action_source(str(found.params.redirect_uri))
        self.set_header("Content-Security-Policy", self.content_security_policy)
        return found

    @web.authenticated
    @authorized("execute")
    def get(self) -> None:
        """Show the request."""
        found = self._pending()
        self._check_consenter()
        self._render(found)

    def _check_consenter(self) -> None:
        """A 403 page saying why, for a user who may not allow clients here (see
        :meth:`OAuthServer.consent_refused`)."""
        user = self.current_user
        refused = self.oauth.consent_refused(getattr(user, "username", None) or str(user))
        if refused is not None:
            raise web.HTTPError(403, "%s", refused)

    @web.authenticated
    @authorized("execute")
    def post(self) -> None:
        """The user's answer: back to the client with a code, or with ``access_denied``."""
        found = self._pending()
        allow = self.get_body_argument("decision", "") == "allow"
        if allow:
            self._check_consenter()
        offered = found.requested.toolsets or self.oauth.served_toolsets()
        chosen = frozenset(self.get_body_arguments("toolset"))
        user = self.current_user
        name = getattr(user, "username", None) or str(user)
        try:
            back = self.oauth.decide(
                found.id,
                self.site,
                name,
                allow=allow,
                read_only=self.get_body_argument("read_only", "") == "on",
                toolsets=chosen if allow else None,
                user_label=getattr(user, "display_name", "") or name,
            )
        except ValueError as e:
            self._render(found, error=str(e), chosen=chosen or offered)
            return
        self.redirect(back)

    def _render(self, found: Any, *, error: str = "", chosen: frozenset[str] | None = None) -> None:
        client = found.client
        requested = found.requested
        served = self.oauth.served_toolsets()
        # The sets asked for (all when none was named) that this server serves.
        offered = [t for t in TOOLSETS if t in (requested.toolsets or served) and t in served]
        redirect = urlsplit(str(found.params.redirect_uri))
        user = self.current_user
        settings = self.oauth.settings
        page = _TEMPLATES.get_template("consent.html").render(
            client_name=client.client_name or client.client_id,
            client_id=client.client_id,
            registration=client.registration,
            client_uri=str(client.client_uri) if client.client_uri else "",
            redirect_uri=str(found.params.redirect_uri),
            redirect_host=redirect.netloc or redirect.scheme,
            loopback=redirect.scheme == "http" and is_loopback_host(redirect.hostname or ""),
            metadata_host=urlsplit(client.client_id).netloc
            if client.registration == "metadata"
            else "",
            requested=requested.describe(),
            requested_read_only=requested.read_only,
            scopes=" ".join(found.params.scopes or []),
            toolsets=offered,
            chosen=set(chosen if chosen is not None else offered),
            user=getattr(user, "display_name", None) or getattr(user, "username", str(user)),
            server=found.site.resource,
            request_id=found.id,
            xsrf_form_html=self.xsrf_form_html(),
            action=self.request.path,
            access_hours=settings.access_token_lifetime / 3600,
            refresh_days=settings.refresh_token_lifetime / 86400,
            grant_days=settings.grant_lifetime / 86400,
            script=CONSENT_SCRIPT,
            error=error,
        )
        self.finish(page)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """A refusal as a small page saying why (this is a page people see)."""
        exc = kwargs.get("exc_info", (None, None, None))[1]
        reason = self._reason
        if isinstance(exc, web.HTTPError) and exc.log_message:
            reason = exc.log_message % exc.args if exc.args else exc.log_message
        self.set_header("Content-Type", "text/html; charset=UTF-8")
        self.finish(_TEMPLATES.get_template("consent_error.html").render(reason=reason))


def _form_action_source(uri: str) -> str:
    """The CSP source that lets the consent form's redirect reach the client."""
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https"):
        return f"{parts.scheme}://{parts.netloc}"
    return f"{parts.scheme}:"


class GrantsHandler(OAuthHandlerMixin, APIHandler):
    """``GET mcp/oauth/grants``: this server's grants; ``DELETE mcp/oauth/grants/<id>``:
    revoke one. Jupyter's login only: an OAuth token is no credential here."""

    auth_resource = "mcp"

    @web.authenticated
    @authorized("read")
    def get(self, grant_id: str | None = None) -> None:
        grants = [g.public() for g in self.oauth.grants()]
        for grant in grants:
            grant["access"] = access_of(grant["scopes"]).describe()
        self.set_header("Cache-Control", "no-store")
        self.finish(json.dumps({"grants": grants}))

    @web.authenticated
    @authorized("execute")
    async def delete(self, grant_id: str | None = None) -> None:
        # Who may allow a client may take it back; under JupyterHub, someone the server is
        # shared with may not cut off the owner's clients (see OAuthServer.consent_refused).
        user = self.current_user
        refused = self.oauth.consent_refused(getattr(user, "username", None) or str(user))
        # (An API handler answers its error's message unformatted, so it is formatted here;
        # "%" is doubled for tornado's log line.)
        if refused is not None:
            raise web.HTTPError(403, refused.replace("%", "%%"))
        if not grant_id or not any(g.id == grant_id for g in self.oauth.grants()):
            raise web.HTTPError(404, f"No grant {grant_id} on this server")
        await self.oauth.revoke(grant_id)
        self.set_status(204)
        self.finish()


def oauth_handlers(oauth: OAuthServer) -> list[tuple[str, type[Any], dict[str, Any]]]:
    """The OAuth routes (see the module docstring), relative to ``base_url``."""
    given: dict[str, Any] = {"oauth": oauth}
    routes: list[tuple[str, type[Any], dict[str, Any]]] = [
        (r"/\.well-known/oauth-protected-resource(?:/mcp)?", ResourceMetadataHandler, given),
        (
            r"/\.well-known/(?:oauth-authorization-server|openid-configuration)",
            AuthorizationServerMetadataHandler,
            given,
        ),
        (r"/mcp/oauth/authorize", AuthorizeHandler, given),
        (r"/mcp/oauth/token", TokenEndpointHandler, given),
        (r"/mcp/oauth/revoke", RevocationEndpointHandler, given),
        (r"/mcp/oauth/consent", ConsentHandler, given),
        (r"/mcp/oauth/grants(?:/(?P<grant_id>[A-Za-z0-9_\-]+))?", GrantsHandler, given),
    ]
    if oauth.settings.dynamic_registration:
        routes.append((r"/mcp/oauth/register", RegistrationEndpointHandler, given))
    return routes
