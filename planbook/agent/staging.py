"""How a write tool's change goes through the policy: refused by a rule, asked about (the run
pauses until the person answers), staged, or applied at once behind a checkpoint; and what the
tool then tells the model."""

from __future__ import annotations

from collections.abc import Callable

from pydantic_ai import ApprovalRequired, ModelRetry, RunContext

from planbook.agent.context import AgentDeps
from planbook.engine.rules.file import is_protected
from planbook.errors import OutsideWorkspace, UnknownCell, UnreadableFile, UsageMistake
from planbook.model.plan import APPROVED_BY_RULE, Step
from planbook.sessions.session import Session

#: Tools that execute code or commands, or act outside planbook (``mcp``, the MCP servers'
#: tools: agent/mcp_toolsets.py): auto-edit mode asks before these.
EXECUTING = {"run_cell", "shell", "mcp"}

_QUEUED = (
    "NOT applied: it is queued in the plan and will not exist until the person approves it. "
    "Do not retry it. Continue planning (later steps may build on it), and call "
    "present_plan(summary) when the plan is complete."
)


def _needs_person(deps: AgentDeps, tool: str, target: str | None) -> bool:
    mode = deps.session.mode
    if mode == "plan":
        return False  # staged: the plan itself is the person's review
    if tool != "shell" and is_protected(target):
        return True  # planbook's rules, pyproject.toml, .git: no rule lets a change skip review
    rule = deps.rules.decide(tool, target)
    if rule == "ask":
        return True
    if rule == "allow":
        return False
    return mode == "ask" or (mode == "auto-edit" and tool in EXECUTING)


async def stage_change(
    ctx: RunContext[AgentDeps],
    tool: str,
    target: str | None,
    summary: str,
    propose: Callable[[], Step],
) -> str:
    """The path of every write tool: ``propose`` makes the step (``session.propose.*``) once
    the rules and the mode allow it; the answer tells the model what became of it."""
    deps = ctx.deps
    session = deps.session
    if deps.rules.decide(tool, target) == "deny":
        return (
            f"Refused by a permission rule ([tool.planbook] denies {tool} on {target!r}). "
            "Do not retry; find another way or tell the person."
        )
    if not ctx.tool_call_approved and _needs_person(deps, tool, target):
        raise ApprovalRequired(
            metadata={"tool": tool, "target": target, "summary": summary, "mode": session.mode}
        )
    try:
        step = propose()
    except (UsageMistake, UnknownCell, OutsideWorkspace, UnreadableFile) as exc:
        # The call itself is wrong (bad id, path outside the workspace): the model can fix it.
        raise ModelRetry(str(exc)) from None
    plan = session.current_plan()
    number = plan.steps.index(next(s for s in plan.steps if s.id == step.id)) + 1 if plan else 0
    new_cell = getattr(step.operation, "cell_id", None) if tool == "insert_cell" else None
    ids = f"step id {step.id}" + (f", new cell id {new_cell}" if new_cell else "")
    if session.mode == "plan":
        deps.say("staged", f"step {number} staged: {summary}", step_id=step.id, number=number)
        return f"Queued as step {number} ({ids}): {_QUEUED}"
    protected = deps.rules.protected_reason(step.operation)
    if step.status == "pending" and protected and not ctx.tool_call_approved:
        # Protected settings are reviewed in every mode: the policy staged it; leave it there.
        deps.say("staged", f"step {number} staged for review: {summary}", step_id=step.id)
        return (
            f"Staged as step {number} ({ids}) for the person's review, NOT applied: "
            f"{protected}. Changes to planbook's settings, .git/ and the notebook file are "
            "always reviewed. Do not retry it; continue."
        )
    if (
        step.status == "pending"
        and step.runs_later
        and not (ctx.tool_call_approved and session.mode == "ask")
    ):
        # A file that runs code later: only the person's own review of this very call (ask
        # mode) applies it; a rule, auto-edit mode or an answer a notebook carries does not.
        deps.say("staged", f"step {number} staged for review: {summary}", step_id=step.id)
        return (
            f"Staged as step {number} ({ids}) for the person's review, NOT applied: "
            f"it runs code later ({step.runs_later}). Do not retry it or write it another "
            "way; continue, and say in your summary why the file is needed."
        )
    if step.status == "pending":
        # The person approved this call (or a rule allows it): run exactly this step now.
        report = session.approve(
            f"{number}-{number}", by="ask mode" if ctx.tool_call_approved else APPROVED_BY_RULE
        )
        if not report.ok:
            return f"Step {number} ({ids}) did not apply: {' / '.join(report.lines())}"
        if plan is not None:
            # The task's next change joins this plan (one plan per task in ask mode too).
            plan = session.keep_open(plan.id)
        step = (session.current_plan() or plan).find_step(step.id) or step  # type: ignore[union-attr]
    result = result_message(session, step.id)
    deps.say("staged", f"step {number} applied: {summary}", step_id=step.id, number=number)
    note = f"\nNote: it runs code later ({step.runs_later})." if step.runs_later else ""
    return (
        f"Applied as step {number} ({ids}), behind a checkpoint: {step.status}"
        + (f"\n{result}" if result else "")
        + note
    )


def result_message(session: Session, step_id: str) -> str:
    plan = session.current_plan()
    if plan is None:
        return ""
    results = [r for r in plan.results if r.step_id == step_id]
    return results[-1].message[:4000] if results else ""


async def propose_shell(
    ctx: RunContext[AgentDeps], command: str, reason: str, *, timeout: float
) -> str:
    """Put a shell command through the policy (staged, asked or applied by mode and rules)."""
    return await stage_change(
        ctx,
        "shell",
        command,
        f"shell: {command[:80]}",
        lambda: ctx.deps.session.propose.shell(command, reason=reason, timeout=timeout),
    )
