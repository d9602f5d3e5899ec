"""Which tools of an MCP server may run at once: read-only by their annotation AND by their name.

An MCP server describes its tools itself, and ``readOnlyHint`` is a hint from that server, not a
guarantee: planbook believes it only for a tool whose name does not look like a write. A name
looks like a write when one of its word parts (split at ``_``, ``-``, ``.``, ``/`` and
lowerCamel humps) is in ``WRITE_WORDS``: ``create_thing``, ``pushFiles`` and ``repo.delete``
all do, ``dataset_info`` does not. What this cannot see: a tool that says it is read-only, is
named like a read, and writes all the same. It runs at once; a rule (``mcp = { "srv.tool" =
"ask" }``) makes it ask. docs/permissions.md says so too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["WRITE_WORDS", "looks_like_write", "runs_at_once", "word_parts"]

#: Word parts that make a tool name look like a write. One list, kept here only.
WRITE_WORDS = frozenset(
    {
        # the verbs named in issue 22
        "create", "update", "delete", "remove", "push", "commit", "send", "write", "set", "put",
        "post", "patch", "merge", "move", "rename", "upload", "publish", "deploy", "exec", "run",
        "execute",
        # more of the same: what changes, sends, runs or spends something
        "add", "insert", "append", "edit", "modify", "change", "replace", "upsert", "overwrite",
        "drop", "truncate", "destroy", "erase", "wipe", "purge", "clear", "reset", "kill",
        "stop", "start", "restart", "close", "reopen", "archive", "restore", "revert",
        "rollback", "rebase", "assign", "approve", "reject", "cancel", "revoke", "grant",
        "invite", "transfer", "fork", "install", "uninstall", "apply", "submit", "reply",
        "comment", "star", "unstar", "follow", "unfollow", "subscribe", "unsubscribe", "enable",
        "disable", "import", "save", "store", "sync", "schedule", "trigger", "dispatch",
        "invoke", "call", "email", "notify", "pay", "charge", "refund", "order", "buy", "sell",
        "lock", "unlock", "mark", "tag", "label", "mutate", "transition", "resolve", "block",
        "unblock", "mute", "unmute", "ban", "kick", "dismiss", "react", "vote", "like", "share",
    }
)  # fmt: skip

_SPLIT = re.compile(r"[_\-./\s:]+")
_HUMPS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def word_parts(name: str) -> list[str]:
    """``createIssue`` -> create, issue; ``repo.delete-file`` -> repo, delete, file."""
    return [w.lower() for chunk in _SPLIT.split(name) for w in _HUMPS.findall(chunk)]


def looks_like_write(name: str) -> bool:
    return any(word in WRITE_WORDS for word in word_parts(name))


def runs_at_once(name: str, annotations: Mapping[str, Any] | None) -> bool:
    """Whether a call of tool ``name`` may run without review (rules aside): its annotation
    says ``readOnlyHint: true`` and its name does not look like a write."""
    if not annotations or annotations.get("readOnlyHint") is not True:
        return False
    return not looks_like_write(name)
