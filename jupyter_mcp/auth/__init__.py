"""OAuth for remote MCP clients: the Jupyter server is its own authorization server.

A web or desktop client (claude.ai's connectors, ChatGPT, VS Code) finds the authorization
server from ``/mcp``'s 401, registers (Client ID Metadata Document or Dynamic Client
Registration), sends the user to a consent page behind Jupyter's login, and gets a token that
is good for ``/mcp`` alone, with the scopes the user allowed. Modules: :mod:`.scopes` (what a
scope allows), :mod:`.store` (the grants file), :mod:`.client_metadata` (fetching client
documents), :mod:`.provider` (the authorization server the SDK's handlers call),
:mod:`.identity` (tokens as credentials of ``/mcp``), :mod:`.handlers` (HTTP).

Threat model (what this defends, and how):

- *A token leaks* (client logs, a compromised client). It is no Jupyter credential: Jupyter's
  own identity provider never sees it, so ``/api/contents``, kernels, terminals and the lab
  socket refuse it; it is bound to this server's ``/mcp`` URL (RFC 8707 audience) and to this
  server (another Jupyter server of the same user, sharing the grants file, refuses it); it
  lasts an hour; the user sees the grant, when it was last used, and revokes it.
- *The grants file is read* (a backup, another process of the user). It holds SHA-256 digests
  of tokens, never tokens, and is 0600. Dynamic clients' secrets are stored as issued: they
  are useless without a grant's refresh token.
- *A malicious client or page tricks the user.* Nothing is granted without the logged-in
  user's click on a page that names the client (and where its metadata lives or that it
  registered itself), where the answer goes (a warning when that is this machine, which any
  local program could claim), and what it asks; the user can narrow it (read-only, fewer tool
  sets). The page cannot be framed (CSP ``frame-ancestors 'none'``, ``X-Frame-Options``) and
  takes no cross-site post (Jupyter's XSRF token). Redirect URIs match exactly (loopback ports
  aside, RFC 8252); http redirects only to loopback.
- *A code or refresh token is intercepted.* PKCE (S256 only) binds a code to its requester;
  codes live 60 seconds, once; refresh tokens rotate, and one used twice revokes its grant, as
  does a code exchanged twice. ``iss`` is sent on every authorization response (RFC 9207).
- *Server-side request forgery through a client metadata URL.* https only, public addresses
  only (checked on the resolved addresses the connection uses), no redirects, 5 KiB, 5 s.
- *Anyone on the network calls the open endpoints* (metadata, authorize, token, register). They
  hold state in bounded tables (1000 waiting requests, 500 registered clients without a grant,
  1000 cached documents) and make at most one guarded 5-second fetch per authorization request.
- *Escalation through scopes.* A refreshed token never gets more than its grant (dropping
  ``mcp:read`` counts as more); narrowed answers (``tools/list``) are private to their token.
- Not defended here: a user who allows a client they should not trust (the tools can do what
  the user can, within the scopes); a plain-http deployment on a network (OAuth is refused
  there: https, or http on loopback only); the host's root under JupyterHub, which is the hub's.
"""
