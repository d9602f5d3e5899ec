"""The audit trail ``planbook log`` prints: who approved what, when, with which hash, and what
each approved step did, as rows a person (or ``--json``) reads."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from planbook.model.store import PlanbookState


def audit_rows(state: PlanbookState) -> list[dict[str, str]]:
    """The audit trail: the session log (staged, approved with its hash, rejected, rollbacks,
    modes), each approval followed by the results of the steps it ran."""
    approvals = {a.sha256: a for plan in state.plans for a in plan.approvals}
    results: dict[str, list[dict[str, str]]] = {}
    numbers: dict[str, int] = {}
    for plan in state.plans:
        numbers.update({s.id: n for rev in plan.revisions for n, s in enumerate(rev.steps, 1)})
    for plan in state.plans:
        kinds = {s.id: s.operation.kind for rev in plan.revisions for s in rev.steps}
        for r in plan.results:
            detail = f"{plan.id} step {numbers.get(r.step_id, '?')} ({kinds.get(r.step_id, '?')})"
            detail += f" {r.step_id}" + (f" checkpoint {r.checkpoint}" if r.checkpoint else "")
            detail += f": {r.message}" if r.message else ""
            row = {"at": _when(r.at), "by": "executor", "event": r.status, "detail": detail}
            results.setdefault(r.step_id, []).append(row)
    rows: list[dict[str, str]] = []
    for entry in state.log:
        by = entry.by
        if entry.event == "approved":
            sha = entry.detail.rpartition("sha256=")[2]
            by = approvals[sha].by if sha in approvals and approvals[sha].by else by
        detail = _with_numbers(entry.event, entry.detail, numbers)
        rows.append({"at": _when(entry.at), "by": by, "event": entry.event, "detail": detail})
        if entry.event == "approved":
            # The log's timestamps are whole seconds: place each result after its approval.
            ids = entry.detail.partition(" steps ")[2].partition(" ")[0].split(",")
            for step_id in ids:
                if results.get(step_id):
                    rows.append(results[step_id].pop(0))
    leftover = [row for rows_left in results.values() for row in rows_left]
    return rows + sorted(leftover, key=lambda row: row["at"])


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
