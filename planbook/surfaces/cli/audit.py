"""The audit trail ``planbook log`` prints: who approved what (the person at the machine as
user@host, and how: by hand, a rule, a mode), when, with which hash, who proposed each step
when not this notebook's kernel (an MCP client), and what each approved step did, as rows a
person (or ``--json``) reads. Every row has the same keys; "" where one does not apply."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from planbook.model.store import PlanbookState


def audit_rows(state: PlanbookState) -> list[dict[str, str]]:
    """The audit trail: the session log (staged, approved with its hash, rejected, rollbacks,
    modes), each approval followed by the results of the steps it ran. ``person``: who
    approved, as user@host; ``origin``: who proposed the steps, when not the kernel."""
    approvals = {a.sha256: a for plan in state.plans for a in plan.approvals}
    results: dict[str, list[dict[str, str]]] = {}
    numbers: dict[str, int] = {}
    origins: dict[str, str] = {}
    for plan in state.plans:
        for rev in plan.revisions:
            numbers.update({s.id: n for n, s in enumerate(rev.steps, 1)})
            origins.update({s.id: s.origin for s in rev.steps if s.origin})
    for plan in state.plans:
        kinds = {s.id: s.operation.kind for rev in plan.revisions for s in rev.steps}
        for r in plan.results:
            detail = f"{plan.id} step {numbers.get(r.step_id, '?')} ({kinds.get(r.step_id, '?')})"
            detail += f" {r.step_id}" + (f" checkpoint {r.checkpoint}" if r.checkpoint else "")
            detail += f": {r.message}" if r.message else ""
            row = _row(_when(r.at), "executor", r.status, detail, origin=origins.get(r.step_id))
            results.setdefault(r.step_id, []).append(row)
    rows: list[dict[str, str]] = []
    for entry in state.log:
        by, person = entry.by, ""
        if entry.event == "approved":
            approval = approvals.get(entry.detail.rpartition("sha256=")[2])
            if approval is not None:
                by = approval.by or by
                person = approval.person or "unknown (approved before planbook named people)"
        detail = _with_numbers(entry.event, entry.detail, numbers)
        ids = _step_ids(entry.event, entry.detail)
        origin = ", ".join(dict.fromkeys(origins[i] for i in ids if i in origins))
        rows.append(_row(_when(entry.at), by, entry.event, detail, person=person, origin=origin))
        if entry.event == "approved":
            # The log's timestamps are whole seconds: place each result after its approval.
            ids = entry.detail.partition(" steps ")[2].partition(" ")[0].split(",")
            for step_id in ids:
                if results.get(step_id):
                    rows.append(results[step_id].pop(0))
    leftover = [row for rows_left in results.values() for row in rows_left]
    return rows + sorted(leftover, key=lambda row: row["at"])


def _row(
    at: str, by: str, event: str, detail: str, *, person: str = "", origin: str | None = ""
) -> dict[str, str]:
    return {
        "at": at,
        "by": by,
        "event": event,
        "detail": detail,
        "person": person,
        "origin": origin or "",
    }


def _step_ids(event: str, detail: str) -> list[str]:
    """The steps a log entry names: a staged step, or the steps of an approval."""
    if event == "staged":
        return [detail.partition(" ")[0]]
    if event == "approved" and " steps " in detail:
        return detail.partition(" steps ")[2].partition(" ")[0].split(",")
    return []


def audit_line(row: dict[str, str]) -> str:
    """One row as ``planbook log`` prints it: who approved (user@host) and who proposed
    (an MCP client) follow the detail when the row has them."""
    line = f"{row['at']}  {row['by']:<20} {row['event']:<10} {row['detail']}"
    if row.get("person") and f"by {row['person']} " not in row["detail"]:
        line += f" · approved by {row['person']}"  # a log written before it named people
    if row.get("origin"):
        line += f" · proposed by {row['origin']}"
    return line


def _with_numbers(event: str, detail: str, numbers: dict[str, int]) -> str:
    """The log names steps by id; a person reads them by number: "step 2 (id)"."""

    def label(ids: list[str]) -> str:
        return ",".join(str(numbers.get(i, "?")) for i in ids) + f" ({','.join(ids)})"

    if event == "staged":
        step_id, _, kind = detail.partition(" ")
        if step_id in numbers:
            return f"step {numbers[step_id]} {kind} ({step_id})"
    elif event == "approved" and " steps " in detail:
        head, _, rest = detail.partition(" steps ")
        ids, _, tail = rest.partition(" ")
        return f"{head} steps {label(ids.split(','))} {tail}"
    elif event == "rejected" and all(i in numbers for i in detail.split(",")):
        return f"steps {label(detail.split(','))}"
    return detail


def _when(value: Any) -> str:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment.strftime("%Y-%m-%d %H:%M:%S")
