"""Who may do what, per mode (DESIGN.md's table), refined by permission rules.

Writes in plan mode are staged whatever a rule says: a rule can refuse a change or ask about
it, never let it bypass the plan.

Protected settings (engine/protected.py: planbook.toml, [tool.planbook], .git/, the notebook)
reach ``decide`` as an "ask" from the rules hook (engine/rules.py ``RuleSet.decide_op``), which
no allow rule can turn into anything else: so they are staged in every mode, act included.

A write that runs code later (engine/rules/runs_later.py: a module that shadows an installed
one, git's settings, start-up files) reaches ``decide`` as "hold": auto-edit mode stages it for
review (its promise is that execution waits, and such a file executes at the next kernel start
or git command); act mode applies it, since act's promise is that everything applies, and the
step says what it will run (``Step.runs_later``). No allow rule turns a hold into an apply.
"""

from __future__ import annotations

from typing import Literal

from planbook.errors import PlanbookError, PolicyDenied
from planbook.model.operations import AnyOperation, McpCall, RunCell, Shell
from planbook.model.store import MODES, Mode

Decision = Literal["stage", "apply"]
RuleVerdict = Literal["allow", "ask", "deny", "hold"] | None


def check_mode(mode: str) -> Mode:
    if mode not in MODES:
        raise PlanbookError(f"unknown mode `{mode}`: choose one of {', '.join(MODES)}")
    return mode  # type: ignore[return-value,unused-ignore]


def decide(
    mode: Mode, op: AnyOperation, rule: RuleVerdict = None, *, runs: bool = False
) -> Decision:
    """``stage``: it waits in the plan for the person; ``apply``: it runs now, with a checkpoint."""
    if rule == "deny":
        raise PolicyDenied(
            f"refused by a permission rule: {op.kind} is denied here; change [tool.planbook] "
            "in pyproject.toml if it should be allowed"
        )
    if mode in ("plan", "ask") or rule == "ask":
        return "stage"
    if rule == "hold":
        return "apply" if mode == "act" else "stage"
    executes = runs or isinstance(op, RunCell | Shell | McpCall)
    if mode == "auto-edit" and executes and rule != "allow":
        return "stage"
    return "apply"
