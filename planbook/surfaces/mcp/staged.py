"""What a propose tool answers once its step is staged: the step's number, id and what it does,
and whether it waits for the person. Said the same by the endpoint that staged it into a file or
a room and by the kernel that staged it into the open page (in_kernel.py), so this module needs
nothing of the MCP SDK."""

from __future__ import annotations

from planbook.model.plan import Step
from planbook.present.text import step_title
from planbook.sessions.session import Session

#: What an answer ends with while the step waits: where the person decides, what to do next.
WAITS = (
    "It waits for the person's review (the panel, `%approve`, or `planbook approve`); "
    "call wait_for_review to continue once it is decided."
)


def staged_text(where: str, session: Session, step: Step) -> str:
    """One short paragraph: the step's number, id and what it does, and whether it waits or (in
    a mode where the person lets changes apply at once) what became of it; ``where`` names the
    notebook as the client does."""
    plan = session.current_plan()
    number = next((n for n, s in enumerate(plan.steps, 1) if s.id == step.id), 0) if plan else 0
    head = f"step {number} of the plan in {where} (step id {step.id}): {step_title(step)}"
    protected = session.rules.protected_reason(step.operation)
    if step.status == "pending" and protected:
        return f"Staged {head}, marked protected ({protected}); only the person applies it. {WAITS}"
    if step.status == "pending" and step.runs_later:
        return f"Staged {head}; held for review: it runs code later ({step.runs_later}). {WAITS}"
    if step.status == "pending":
        return f"Staged {head}. {WAITS}"
    return f"{head}: {step.status} (the notebook is in {session.mode} mode, which applies changes)"
