"""The plan as the model is told it: one line per step, the whole listing, or only what changed
since the model's last request (``AgentDeps.plan_seen`` remembers what it saw)."""

from __future__ import annotations

from planbook.agent.context import AgentDeps
from planbook.model.words import count
from planbook.present.views import step_title
from planbook.sessions.session import Session


def plan_lines(session: Session) -> dict[str, str]:
    """One line per step of the open plan, by step id: what the model is told about it."""
    plan = session.current_plan()
    if plan is None or not plan.is_open:
        return {}
    return {
        step.id: f"step {n} [{step.status}] id={step.id}: {step_title(step)}"
        + (f" ({step.reason})" if step.reason else "")
        for n, step in enumerate(plan.steps, start=1)
    }


def plan_listing(session: Session) -> str:
    """The whole open plan, for read_plan, summaries and the "whole" setting."""
    plan = session.current_plan()
    if plan is None or not plan.is_open:
        return "There is no open plan."
    lines = [f"Plan {plan.id} ({plan.state.replace('_', ' ')}), task: {plan.task or '-'}"]
    if plan.current.feedback:
        lines.append(f"The person asked for this revision: {plan.current.feedback}")
    lines += [f"  {line}" for line in plan_lines(session).values()]
    if not plan.steps:
        lines.append("  (no steps staged yet)")
    return "\n".join(lines)


def seen_listing(deps: AgentDeps) -> str:
    """The whole plan, remembered as what the model has now seen (sent in a summary)."""
    deps.plan_seen = plan_lines(deps.session)
    return plan_listing(deps.session)


def plan_changes(deps: AgentDeps) -> str:
    """What changed in the plan since the model's last request (the whole plan the first time)."""
    session = deps.session
    now = plan_lines(session)
    seen, deps.plan_seen = deps.plan_seen, now
    if seen is None:
        return plan_listing(session)
    plan = session.current_plan()
    head = (
        f"Plan {plan.id} ({plan.state.replace('_', ' ')}), {count(plan.steps, 'step')}"
        if plan is not None and plan.is_open
        else "There is no open plan."
    )
    changes = [f"  + {line}" for sid, line in now.items() if sid not in seen]
    changes += [f"  ~ {line}" for sid, line in now.items() if sid in seen and seen[sid] != line]
    changes += [f"  - gone: {line}" for sid, line in seen.items() if sid not in now]
    if not changes:
        return f"{head}: no change since your last request (read_plan shows it whole)."
    return f"{head}; changed since your last request:\n" + "\n".join(changes)
