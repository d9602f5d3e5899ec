"""The permission rules as a person sees them: a numbered list with where each rule comes from,
and revoking one by its number. The same calls serve ``%plan rules`` and the panel.

A rule saved to planbook.toml in this session is listed once (as the file has it), and revoking
it removes both the file's rule and the session's copy, so nothing keeps allowing it.
"""

from __future__ import annotations

from pydantic import ConfigDict

from planbook.engine.rules.file import remove_rule
from planbook.engine.rules.rule import Rule
from planbook.errors import UsageMistake
from planbook.model.base import PlanbookModel
from planbook.model.events import Event
from planbook.sessions.session import Session

__all__ = ["RuleView", "revoke", "rule_views"]


class RuleView(PlanbookModel):
    """One rule as listed: its number is what ``revoke`` takes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    number: int
    tool: str
    pattern: str
    action: str
    source: str
    revocable: bool


def _listed(session: Session) -> list[Rule]:
    rules = session.rules.current().rules
    on_file = {(r.tool, r.pattern, r.action) for r in rules if r.source != "added"}
    return [r for r in rules if r.source != "added" or (r.tool, r.pattern, r.action) not in on_file]


def rule_views(session: Session) -> list[RuleView]:
    return [
        RuleView(
            number=n,
            tool=r.tool,
            pattern=r.pattern,
            action=r.action,
            source="this session" if r.source == "added" else r.source,
            revocable=not r.source.startswith("pyproject"),
        )
        for n, r in enumerate(_listed(session), start=1)
    ]


def revoke(session: Session, number: int) -> Rule:
    """Remove rule ``number``: from planbook.toml (comments kept), or from this session."""
    listed = _listed(session)
    if not 1 <= number <= len(listed):
        raise UsageMistake(f"there is no rule {number}: `%plan rules` lists 1 to {len(listed)}")
    rule = listed[number - 1]
    key = (rule.tool, rule.pattern, rule.action)
    ruleset = session.rules.current()
    if rule.source != "added":
        remove_rule(session.workspace.root, rule)
    ruleset.rules[:] = [
        r
        for r in ruleset.rules
        if not (r.source == "added" and (r.tool, r.pattern, r.action) == key)
    ]
    session.rules.current()  # read the files again
    session.events.emit(Event(kind="plan_changed", message=f"rule {number} revoked"))
    return rule
