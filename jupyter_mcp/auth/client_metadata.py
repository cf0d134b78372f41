"""Client ID Metadata Documents: a client whose ``client_id`` is an https URL is described by
the JSON document at that URL, which this server fetches.

Fetching a URL that anyone may send is a server-side request forgery risk: the fetch must never
reach this machine, the user's network or a cloud's metadata service. So:

- the URL is ``https`` (``http`` only on a loopback host, and only with
  ``c.JupyterMCP.oauth_allow_insecure_client_metadata``, for tests), has a path, no fragment,
  no user name or password, no ``.``/``..`` segments;
- every address its host resolves to must be a public one (no private, loopback, link-local,
  multicast or reserved address; an IPv6 address that carries an IPv4 one (mapped, NAT64,
  SIIT, 6to4, IPv4-compatible) is checked by that one, and Teredo, local-use NAT64 and
  site-local are refused), checked by the resolver the connection then uses, so the name
  cannot resolve to something else in between;
- no redirect is followed (a redirect is an error), only ``200`` with a JSON content type counts;
- the body is at most :data:`MAX_BYTES` and the whole fetch at most :data:`TIMEOUT` seconds;
- why a connection failed is logged, and the caller (who needs no login) is told only that
  the document could not be fetched: no port-scanning through this server;
- the document must say this very URL as its ``client_id``, name the client and its redirect
  URIs, and ask for no client secret (a public document cannot keep one).

A document is cached as its ``Cache-Control`` allows, between one minute and one day.
Nothing here knows the rest of OAuth: :mod:`.provider` turns a document into a client record.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.netutil import DefaultLoopResolver, Resolver
from tornado.simple_httpclient import SimpleAsyncHTTPClient

#: Largest document accepted, in bytes.
MAX_BYTES = 5 * 1024
#: Seconds a fetch may take, connection included.
TIMEOUT = 5.0
#: How long a document is kept when its response says nothing (seconds), and the bounds.
DEFAULT_CACHE = 600.0
MIN_CACHE, MAX_CACHE = 60.0, 86400.0
_JSON_TYPE = re.compile(r"^application/([a-z0-9.+-]+\+)?json\s*(;.*)?$", re.IGNORECASE)
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
log = logging.getLogger("jupyter_mcp.auth")


class ClientMetadataError(Exception):
    """The document cannot be used; the message says what was wrong, for the client's author."""


def is_metadata_url(client_id: str) -> bool:
    """Whether a ``client_id`` is meant as a metadata document URL (and not a registered id)."""
    return client_id.startswith(("https://", "http://"))


def is_loopback_host(host: str) -> bool:
    """``localhost`` or a loopback IP literal (brackets around IPv6 allowed)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str, *, allow_insecure: bool) -> None:
    """Refuse a ``client_id`` URL that is not one this server will fetch."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise ClientMetadataError(f"client_id {url!r} is not a valid URL: {e}") from None
    host = parts.hostname or ""
    if parts.scheme != "https":
        if not (parts.scheme == "http" and allow_insecure and is_loopback_host(host)):
            raise ClientMetadataError(
                f"client_id {url!r}: a client metadata URL must use https"
                + (" (http only on a loopback host, in tests)" if allow_insecure else "")
            )
    if not host:
        raise ClientMetadataError(f"client_id {url!r} has no host")
    if parts.username is not None or parts.password is not None:
        raise ClientMetadataError(f"client_id {url!r} must not contain a user name or password")
    if parts.fragment or url.endswith("#"):
        raise ClientMetadataError(f"client_id {url!r} must not contain a fragment")
    segments = parts.path.split("/")
    if parts.path in ("", "/") or any(s in (".", "..") for s in segments):
        raise ClientMetadataError(
            f"client_id {url!r} must have a path (such as /client.json) without . or .. segments"
        )
    if port == 0:
        raise ClientMetadataError(f"client_id {url!r} has no usable port")


#: IPv6 prefixes whose addresses carry an IPv4 address in their last 32 bits: NAT64's
#: well-known prefix (RFC 6052), SIIT (RFC 6145) and IPv4-compatible addresses (RFC 4291). The
#: address they reach is the IPv4 one, so that is the one checked.
_EMBEDDING_IPV4 = tuple(
    ipaddress.IPv6Network(n) for n in ("64:ff9b::/96", "::ffff:0:0:0/96", "::/96")
)
#: IPv6 prefixes refused whatever follows: local-use NAT64 (RFC 8215; where the IPv4 address
#: sits depends on the network's own prefix length), Teredo (the client's IPv4 address is
#: obfuscated, and the relay is anyone's) and the deprecated site-local fec0::/10.
_REFUSED_IPV6 = tuple(
    ipaddress.IPv6Network(n) for n in ("64:ff9b:1::/48", "2001::/32", "fec0::/10")
)


def _address_allowed(address: str, *, allow_loopback: bool) -> bool:
    """Whether a fetch may connect to ``address``: a public one (loopback in tests)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip.is_loopback or ip.is_unspecified:
            pass
        elif any(ip in net for net in _REFUSED_IPV6):
            return False
        elif any(ip in net for net in _EMBEDDING_IPV4):
            ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        elif ip.sixtofour is not None:  # 2002::/16 (6to4, RFC 3056) reaches its IPv4 address
            ip = ip.sixtofour
    if ip.is_loopback:
        return allow_loopback
    return ip.is_global and not ip.is_multicast


class NotPublicAddress(OSError):
    """The client metadata URL's host is (or resolves to) an address this server never
    fetches from. Said as it is: the refusal is decided before any connection, so it tells
    nothing about what listens there."""


class PublicAddressResolver(Resolver):
    """Resolves like the default resolver and refuses a name with any non-public address.

    The HTTP client connects to exactly the addresses this returns, so what was checked is
    what is reached.
    """

    def initialize(self, allow_loopback: bool = False) -> None:
        self._inner = DefaultLoopResolver()
        self._allow_loopback = allow_loopback

    async def resolve(
        self, host: str, port: int, family: socket.AddressFamily = socket.AF_UNSPEC
    ) -> list[tuple[int, Any]]:
        found = await self._inner.resolve(host, port, family)
        for _, address in found:
            if not _address_allowed(address[0], allow_loopback=self._allow_loopback):
                where = host if host == address[0] else f"{host} resolves to {address[0]}, which"
                raise NotPublicAddress(
                    f"{where} is not a public address: client metadata is fetched from the "
                    "public internet only"
                )
        return found


@dataclass
class ClientMetadata:
    """A fetched and checked document (its JSON) and until when it may be used."""

    url: str
    document: dict[str, Any]
    expires: float


def validate_document(url: str, document: Any) -> dict[str, Any]:
    """The document as a client's metadata, or a :class:`ClientMetadataError` saying why not."""
    if not isinstance(document, dict):
        raise ClientMetadataError(f"The client metadata at {url} is not a JSON object")
    if document.get("client_id") != url:
        raise ClientMetadataError(
            f"The client metadata at {url} names client_id {document.get('client_id')!r}; it "
            "must be the document's own URL, exactly"
        )
    name = document.get("client_name")
    if not isinstance(name, str) or not name.strip():
        raise ClientMetadataError(f"The client metadata at {url} has no client_name")
    uris = document.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) for u in uris):
        raise ClientMetadataError(f"The client metadata at {url} lists no redirect_uris")
    for secret in ("client_secret", "client_secret_expires_at"):
        if secret in document:
            raise ClientMetadataError(
                f"The client metadata at {url} contains {secret}: a public document cannot "
                "hold a secret"
            )
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise ClientMetadataError(
            f"The client metadata at {url} asks for token_endpoint_auth_method {method!r}; "
            "this server takes clients of metadata documents as public clients ('none')"
        )
    return document


def _cache_seconds(cache_control: str | None) -> float:
    if not cache_control:
        return DEFAULT_CACHE
    directives = [d.strip().lower() for d in cache_control.split(",")]
    if "no-store" in directives or "no-cache" in directives:
        return MIN_CACHE
    for directive in directives:
        if directive.startswith("max-age="):
            try:
                return min(max(float(directive[8:]), MIN_CACHE), MAX_CACHE)
            except ValueError:
                break
    return DEFAULT_CACHE


class ClientMetadataFetcher:
    """Fetches, checks and caches Client ID Metadata Documents (see the module docstring)."""

    def __init__(self, *, allow_insecure: bool = False, clock: Callable[[], float] = time.time):
        self.allow_insecure = allow_insecure
        self.clock = clock
        self._cache: dict[str, ClientMetadata] = {}
        self._fetching: dict[str, asyncio.Future[ClientMetadata]] = {}
        self._client: SimpleAsyncHTTPClient | None = None

    def _http(self) -> SimpleAsyncHTTPClient:
        if self._client is None:
            self._client = SimpleAsyncHTTPClient(
                force_instance=True,
                resolver=PublicAddressResolver(allow_loopback=self.allow_insecure),
                # A hard cap of the connection; the document's limit is checked as it arrives.
                max_body_size=4 * MAX_BYTES,
                max_header_size=16 * 1024,
            )
        return self._client

    def cached(self, url: str) -> ClientMetadata | None:
        """The document of ``url`` if one is cached and fresh."""
        found = self._cache.get(url)
        return found if found is not None and found.expires > self.clock() else None

    async def get(self, url: str) -> ClientMetadata:
        """The checked document of ``url``, from the cache or fetched now."""
        check_url(url, allow_insecure=self.allow_insecure)
        found = self.cached(url)
        if found is not None:
            return found
        running = self._fetching.get(url)
        if running is None:
            running = self._fetching[url] = asyncio.ensure_future(self._fetch(url))
            running.add_done_callback(lambda _: self._fetching.pop(url, None))
        return await asyncio.shield(running)

    async def _fetch(self, url: str) -> ClientMetadata:
        received = bytearray()
        too_large = False

        def header(line: str) -> None:
            nonlocal too_large
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length" and value.strip().isdigit():
                too_large = too_large or int(value) > MAX_BYTES

        def chunk(data: bytes) -> None:
            nonlocal too_large
            # Past the limit nothing more is kept; the connection's own cap ends the transfer.
            if not too_large:
                received.extend(data)
                too_large = len(received) > MAX_BYTES

        request = HTTPRequest(
            url,
            method="GET",
            headers={"Accept": "application/json"},
            follow_redirects=False,
            connect_timeout=TIMEOUT,
            request_timeout=TIMEOUT,
            header_callback=header,
            streaming_callback=chunk,
            decompress_response=False,
            validate_cert=True,
        )
        try:
            response = await asyncio.wait_for(self._http().fetch(request), TIMEOUT + 1)
        except (HTTPClientError, OSError, asyncio.TimeoutError) as e:
            if too_large:
                raise ClientMetadataError(
                    f"The client metadata at {url} is larger than {MAX_BYTES} bytes"
                ) from None
            raise _fetch_error(url, e) from None
        if too_large:
            raise ClientMetadataError(
                f"The client metadata at {url} is larger than {MAX_BYTES} bytes"
            )
        if response.code != 200:
            raise ClientMetadataError(
                f"The client metadata at {url} answered HTTP {response.code}, not 200"
            )
        kind = response.headers.get("Content-Type", "")
        if not _JSON_TYPE.match(kind):
            raise ClientMetadataError(
                f"The client metadata at {url} is served as {kind or 'no content type'!r}, "
                "not application/json"
            )
        try:
            document = json.loads(bytes(received).decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise ClientMetadataError(
                f"The client metadata at {url} is not valid JSON: {e}"
            ) from None
        checked = validate_document(url, document)
        metadata = ClientMetadata(
            url, checked, self.clock() + _cache_seconds(response.headers.get("Cache-Control"))
        )
        self._cache[url] = metadata
        if len(self._cache) > 1000:  # an unbounded cache is memory anyone can fill
            for key in sorted(self._cache, key=lambda k: self._cache[k].expires)[:100]:
                del self._cache[key]
        return metadata

    def close(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            self._client.close()
            self._client = None


def _fetch_error(url: str, error: BaseException) -> ClientMetadataError:
    """What a failed fetch says to the client's author.

    Whoever calls the authorization endpoint needs no login, so why a connection failed
    (refused, reset, timed out, a TLS error) is logged, never answered: the answer would tell
    anyone which hosts and ports this server can reach. An answer of the remote server (a
    redirect, a status) and an address refused before connecting are said.
    """
    if isinstance(error, HTTPClientError) and error.code in (301, 302, 303, 307, 308):
        where = error.response.headers.get("Location") if error.response is not None else None
        return ClientMetadataError(
            f"The client metadata at {url} redirects (to {where}); a metadata document must be "
            "served at its client_id URL itself"
        )
    if isinstance(error, HTTPClientError) and error.code != 599:
        return ClientMetadataError(
            f"The client metadata at {url} answered HTTP {error.code}, not 200"
        )
    if isinstance(error, NotPublicAddress):
        return ClientMetadataError(f"The client metadata at {url} could not be fetched: {error}")
    text = str(error) or type(error).__name__
    if "Content-Length too long" in text or "body too large" in text.lower():
        return ClientMetadataError(f"The client metadata at {url} is larger than {MAX_BYTES} bytes")
    log.info("jupyter_mcp: fetching the client metadata at %s failed: %s", url, _reason(error))
    return ClientMetadataError(
        f"The client metadata at {url} could not be fetched (no answer within {TIMEOUT:g} s, "
        "or no connection); the Jupyter server's log says why"
    )


def _reason(error: BaseException) -> str:
    if isinstance(error, asyncio.TimeoutError) or (
        isinstance(error, HTTPClientError) and "Timeout" in str(error)
    ):
        return f"it took longer than {TIMEOUT:g} s"
    return f"{type(error).__name__}: {error}"
