"""The origin a proposal is tagged with: the MCP client's name and version, as the client
introduced itself in its initialize request (``clientInfo``). The client chooses these words,
so they are cut to one short line of printable text before they reach the plan and the log."""

from __future__ import annotations

import re

from mcp_types import Implementation

#: Characters of the client's own words kept (the Step allows 200).
_KEPT = 80
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e]+")


def _clean(text: str) -> str:
    return " ".join(_UNPRINTABLE.sub(" ", text).split())[:_KEPT]


def origin_of(client: Implementation | None) -> str:
    """``"<name> <version> (MCP)"``, or ``"an unnamed MCP client"`` when it gave no name."""
    if client is None:
        return "an unnamed MCP client"
    name = _clean(client.name or "")
    version = _clean(client.version or "")
    if not name:
        return "an unnamed MCP client"
    return f"{name} {version} (MCP)" if version else f"{name} (MCP)"
