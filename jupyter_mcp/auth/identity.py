"""OAuth access tokens as credentials of the MCP endpoint, and of nothing else.

The MCP endpoint's handler asks :class:`OAuthIdentity` who a request is instead of Jupyter's
identity provider: a ``Bearer`` token of this server (``jmcp_at_…``) is checked here and never
shown to Jupyter's provider (under JupyterHub that would send it to the hub); any other
credential goes to Jupyter's provider as before. :class:`OAuthAuthorizer` lets an OAuth
principal use the ``mcp`` resource and nothing else. Every other handler of the server keeps
Jupyter's own provider, which knows no such token: there it is refused like a wrong password.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from jupyter_core.utils import ensure_async
from jupyter_server.auth.identity import User

from .provider import (
    InvalidToken,
    OAuthPrincipal,
    OAuthServer,
    OAuthUnavailable,
    Site,
    site_for,
)
from .store import ACCESS_PREFIX, REFRESH_PREFIX

_BEARER = re.compile(
    rf"^\s*bearer\s+((?:{ACCESS_PREFIX}|{REFRESH_PREFIX})[A-Za-z0-9_\-]+)\s*$", re.IGNORECASE
)

#: The Jupyter authorization resource an OAuth token may use (the tool routes').
MCP_RESOURCE = "mcp"


def site_of(handler: Any, oauth: OAuthServer) -> Site:
    """The :class:`~.provider.Site` a Tornado request reached (see ``site_for``)."""
    return site_for(
        handler.request.protocol,
        handler.request.host,
        handler.settings.get("base_url", "/"),
        oauth.settings.public_url,
    )


def oauth_bearer(headers: Any) -> str | None:
    """The token of an ``Authorization: Bearer`` header when it is one this server issues."""
    match = _BEARER.match(headers.get("Authorization", ""))
    return match.group(1) if match else None


def principal_of(handler: Any) -> OAuthPrincipal | None:
    """The OAuth principal a request was let in as (None: not an OAuth request)."""
    return getattr(handler, "oauth_principal", None)


class OAuthIdentity:
    """Jupyter's identity provider, with this server's OAuth tokens checked first."""

    def __init__(self, inner: Any, oauth: OAuthServer, site_of: Callable[[Any], Site]) -> None:
        self.inner = inner
        self.oauth = oauth
        self.site_of = site_of

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def get_user(self, handler: Any) -> User | None:
        """An OAuth principal's user, or whoever Jupyter's provider says (no OAuth token)."""
        token = oauth_bearer(handler.request.headers)
        if token is None:
            return await ensure_async(self.inner.get_user(handler))
        try:
            principal = self.oauth.authenticate(token, self.site_of(handler))
        except (InvalidToken, OAuthUnavailable) as e:
            handler.oauth_refusal = str(e)
            return None
        handler.oauth_principal = principal
        grant = principal.grant
        return User(
            username=grant.user or principal.username,
            display_name=f"{grant.client_name} (OAuth, for {grant.user})",
        )

    def is_token_authenticated(self, handler: Any) -> bool:
        """OAuth requests carry a token (no XSRF check, like Jupyter's own token requests)."""
        if principal_of(handler) is not None:
            return True
        return bool(self.inner.is_token_authenticated(handler))

    def should_check_origin(self, handler: Any) -> bool:
        """As for a token request: a bearer token is not sent by browsers on their own."""
        if principal_of(handler) is not None:
            return False
        return bool(self.inner.should_check_origin(handler))


class OAuthAuthorizer:
    """Jupyter's authorizer, except that an OAuth principal may use ``mcp`` and nothing else."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> Any:
        """Allowed for an OAuth principal on ``mcp``; otherwise Jupyter's authorizer decides."""
        if principal_of(handler) is not None:
            return resource == MCP_RESOURCE and action in ("read", "execute")
        return self.inner.is_authorized(handler, user, action, resource)
