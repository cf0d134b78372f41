"""``jupyter mcp-ide clients``: the MCP clients the user allowed with OAuth, and revoking them.

It reads and changes the grants file itself (:class:`~jupyter_mcp.auth.store.GrantStore`,
shared with every server of the user), so it works whether a server runs or not; a running
server sees a revocation at its next request, which then fails.
"""

from __future__ import annotations

import json
import time
from typing import Any

from ..auth.scopes import access_of
from ..auth.store import Grant, GrantStore


def _when(stamp: float | None) -> str:
    if not stamp:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp))


def _registration(grant: Grant) -> str:
    if grant.registration == "metadata":
        return f"metadata document {grant.client_id}"
    return f"registered itself (id {grant.client_id})"


def describe(grants: list[Grant]) -> str:
    """The grants as text, one block each, for people."""
    if not grants:
        return "No MCP client has an OAuth grant."
    blocks = []
    for grant in grants:
        blocks.append(
            "\n".join(
                [
                    f"{grant.id}  {grant.client_name}",
                    f"  client:    {_registration(grant)}",
                    f"  may use:   {access_of(grant.scopes).describe()} "
                    f"(scopes {' '.join(grant.scopes)})",
                    f"  for:       {grant.resource}, allowed by {grant.user_label or grant.user}",
                    f"  created:   {_when(grant.created)}",
                    f"  last used: {_when(grant.last_used)}",
                ]
            )
        )
    return "\n\n".join(blocks)


def as_json(grants: list[Grant]) -> str:
    """The grants as JSON (what the server's grants API answers, per grant)."""
    rows: list[dict[str, Any]] = []
    for grant in grants:
        row = grant.public()
        row["access"] = access_of(grant.scopes).describe()
        rows.append(row)
    return json.dumps(rows, indent=2)


def revoke(store: GrantStore, grant_ids: list[str]) -> list[str]:
    """Revoke the grants ``grant_ids``; the ids that were not found."""
    return [grant_id for grant_id in grant_ids if not store.revoke(grant_id)]
