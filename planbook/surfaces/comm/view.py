"""What the in-cell review shows: the current plan's steps that belong on a cell, as JSON.

Built from ``Session.step_views`` (the same before/after text the panel and the magics show)
and ``planbook.present.diff`` (the same line diff the panel draws), so the page only renders and
every surface agrees on what a step changes. A shell step is shown too, after the last cell,
with its preview (``planbook.surfaces.comm.shell_view``); steps that touch files are left to the
panel: they have no cell to show on.
"""

from __future__ import annotations

from typing import Any

from planbook.model.cell import short_ids
from planbook.model.operations import DeleteCell, EditCell, InsertCell, MoveCell, RunCell, Shell
from planbook.model.plan import Step
from planbook.model.retries import retried_step_ids
from planbook.present.diff import diff_texts
from planbook.present.safe import visible
from planbook.present.views import StepView
from planbook.sessions.session import Session
from planbook.surfaces.comm.protocol import PROTOCOL
from planbook.surfaces.comm.shell_view import shell_entry

#: Statuses shown on a cell. Done, rejected and rolled-back steps are history: the panel has it
#: (the page draws a short trace of a decision it saw on a cell, from ``decided``).
SHOWN = frozenset({"pending", "approved", "running", "failed", "skipped"})
DECIDED = frozenset({"done", "rejected", "rolled_back"})
CELL_OPS = (InsertCell, EditCell, DeleteCell, MoveCell, RunCell)


def _common(session: Session, number: int, step: Step, view: StepView) -> dict[str, Any]:
    """What every step's entry has; as text, control characters visible (``visible``)."""
    return {
        "number": number,
        "id": step.id,
        "kind": step.operation.kind,
        "status": step.status,
        "title": visible(view.title),
        "reason": visible(step.reason),
        "origin": visible(step.origin) if step.origin else step.origin,
        "hash": session.hash_of([step]),  # sent back with Approve: what was shown
        "risk": step.risk,
        "error": visible(view.error) if view.error else view.error,
        "cell_type": None,
        "before": "",
        "after": "",
    }


def plan_message(session: Session) -> dict[str, Any]:
    """``{"type": "plan", ...}``: everything the page needs to draw the plan on its cells."""
    plan = session.current_plan()
    message: dict[str, Any] = {
        "type": "plan",
        "protocol": PROTOCOL,
        "mode": session.mode,
        "plan": None,
        "steps": [],
    }
    if plan is None:
        return message
    message["plan"] = {"id": plan.id, "revision": plan.current.number, "state": plan.state}
    message["decided"] = decided = []
    message["stale"] = stale = {}
    views = {view.id: view for view in session.step_views(plan)}
    retried = retried_step_ids(plan.steps)
    short = short_ids(session.cell_ids())
    previewing = session.previewing
    preview_off = next((v.shell_note for v in views.values() if v.shell_note), "")
    for number, step in enumerate(plan.steps, start=1):
        op = step.operation
        if isinstance(op, Shell) and step.status in SHOWN:
            message["steps"].append(
                {
                    **_common(session, number, step, views[step.id]),
                    **shell_entry(
                        step,
                        op.command,
                        previewing=step.id in previewing,
                        preview_off=preview_off,
                    ),
                }
            )
            continue
        if not isinstance(op, CELL_OPS):
            continue
        if step.status in DECIDED or step.id in retried:
            status = "retried" if step.id in retried else step.status
            decided.append(
                {"number": number, "id": step.id, "cell_id": op.cell_id, "status": status}
            )
            if isinstance(op, EditCell) and step.status == "done" and not step.runs_cell:
                # its output (if any) is from the code before: said on the cell until it runs
                stale[op.cell_id] = number
            elif op.cell_id in stale and step.status == "done" and step.runs_cell:
                del stale[op.cell_id]
            continue
        if step.status not in SHOWN:
            continue
        view = views[step.id]
        entry: dict[str, Any] = {
            **_common(session, number, step, view),
            "cell_id": op.cell_id,
            "short_id": visible(short.get(op.cell_id, op.cell_id)),
            "cell_type": view.cell_type,
            "runs": step.runs_cell,
            "before": view.before,
            "after": view.after,
            "diff": diff_texts(visible(view.before), visible(view.after))
            if isinstance(op, InsertCell | EditCell)
            else None,
        }
        if isinstance(op, InsertCell):
            entry["anchor"] = (
                {"after": op.after}
                if op.after is not None
                else {"before": op.before}
                if op.before is not None
                else {"end": True}
            )
        if isinstance(op, MoveCell):
            entry["anchor"] = {"after": op.after} if op.after is not None else {"top": True}
        message["steps"].append(entry)
    return message
