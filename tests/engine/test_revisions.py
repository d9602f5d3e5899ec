"""engine/revisions.py on its own: restoring an earlier revision makes a new one, and the
history keeps every revision as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from planbook.engine import planning
from planbook.engine.revisions import restore
from planbook.errors import UsageMistake
from planbook.model.operations import EditCell
from planbook.model.plan import Plan
from tests.support.engine import Bench


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    return Bench(tmp_path, ["x = 1", "y = 2"])


def two_revisions(bench: Bench) -> Plan:
    """Revision 1 edits c1 and c2; revision 2 (after feedback) withdraws c2's edit."""
    bench.stage(EditCell(cell_id="c1", source="x = 10"))
    bench.stage(EditCell(cell_id="c2", source="y = 20"))
    plan = bench.plan()
    plan.fire("present")
    planning.revise(plan, "leave y alone")
    plan.steps[1].status = "rejected"
    plan.fire("present")
    return plan


def test_restore_makes_the_old_revision_current_as_a_new_one(bench: Bench) -> None:
    plan = two_revisions(bench)
    history = [r.model_dump() for r in plan.revisions]
    revision = restore(plan, 1)
    assert (revision.number, revision.parent) == (3, 1)
    assert revision.feedback == "restored revision 1"
    assert plan.current is revision and plan.state == "awaiting_approval"  # ready for review
    assert [s.status for s in revision.steps] == ["pending", "pending"]
    assert [s.operation for s in revision.steps] == [s.operation for s in plan.revision(1).steps]
    assert [r.model_dump() for r in plan.revisions[:2]] == history  # nothing rewritten
    # A copy, not the same objects: changing the new revision leaves revision 1 as it was.
    revision.steps[0].status = "skipped"
    assert plan.revision(1).steps[0].status == "pending"


def test_what_happened_since_stays_as_it_happened(bench: Bench) -> None:
    plan = two_revisions(bench)
    report = bench.approve([plan.steps[0]])  # c1's edit runs in revision 2
    assert report.ok
    plan = bench.store.state.plans[-1]
    restored = restore(plan, 1)
    c1, c2 = restored.steps
    assert c1.status == "done" and c1.checkpoint is not None  # it ran: restore cannot unrun it
    assert c2.status == "pending"  # withdrawn in revision 2, back as revision 1 had it
    assert plan.state == "awaiting_approval"


def test_restore_refuses_what_would_change_nothing_or_a_run(bench: Bench) -> None:
    plan = two_revisions(bench)
    with pytest.raises(UsageMistake, match="already the current one"):
        restore(plan, 2)
    plan.fire("approve")
    assert plan.state == "executing"
    with pytest.raises(UsageMistake, match="a run is in progress"):
        restore(plan, 1)
    assert len(plan.revisions) == 2
