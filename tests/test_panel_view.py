"""The panel's data: structured diffs, the JSON view, revision comparison, reorder moves and the
action messages. Pure functions, no kernel."""

from __future__ import annotations

import json

import pytest

from planbook.errors import BadMessage, UsageMistake
from planbook.model.checkpoint import Checkpoint
from planbook.model.operations import EditCell, InsertCell, WriteFile
from planbook.model.plan import Plan, Revision, Step
from planbook.present import diff as diffmod
from planbook.present.diff import diff_texts, side_by_side, unified_text
from planbook.present.views import StepView
from planbook.surfaces.widget.messages import Approve, ShowRevisionDiff, parse
from planbook.surfaces.widget.reorder import moves_for
from planbook.surfaces.widget.view import Progress, build_view, revision_diff


def test_a_changed_line_is_a_removed_and_an_added_line_with_the_changed_characters():
    diff = diff_texts("a = 1\nb = 2\nc = 3\n", "a = 1\nb = 20\nc = 3\nd = 4\n")
    assert diff["kind"] == "changed"
    assert (diff["added"], diff["removed"]) == (2, 1)
    assert unified_text(diff) == "@@ -1,3 +1,4 @@\n a = 1\n-b = 2\n+b = 20\n c = 3\n+d = 4"
    lines = diff["hunks"][0]["lines"]
    assert lines[2] == {"type": "add", "old": None, "new": 2, "text": "b = 20", "ranges": [(5, 6)]}
    assert [(ln["old"], ln["new"]) for ln in lines] == [
        (1, 1),
        (2, None),
        (None, 2),
        (3, 3),
        (None, 4),
    ]


def test_lines_that_barely_match_get_no_intraline_marks():
    diff = diff_texts("import os\n", "df = pd.read_csv('x')\n")
    assert all(ln["ranges"] == [] for ln in diff["hunks"][0]["lines"])


def test_new_deleted_and_unchanged_texts_are_told_apart():
    assert diff_texts("", "x = 1")["kind"] == "added"
    assert diff_texts("x = 1", "")["kind"] == "deleted"
    same = diff_texts("x = 1\n", "x = 1\n")
    assert same["kind"] == "same" and same["hunks"] == []


def test_far_apart_changes_make_separate_hunks_with_three_lines_of_context():
    before = "\n".join(f"line {i}" for i in range(30))
    after = before.replace("line 2\n", "line two\n").replace("line 27", "line twenty-seven")
    hunks = diff_texts(before, after)["hunks"]
    assert [(h["old_start"], h["old_count"]) for h in hunks] == [(1, 6), (25, 6)]


def test_side_by_side_pairs_each_removed_run_with_the_added_run_after_it():
    hunk = diff_texts("a\nb\nc\n", "a\nB\nC\nD\nc\n")["hunks"][0]
    rows = [
        (left["text"] if left else None, right["text"] if right else None)
        for left, right in side_by_side(hunk)
    ]
    assert rows == [("a", "a"), ("b", "B"), (None, "C"), (None, "D"), ("c", "c")]


def test_a_huge_diff_is_cut_and_says_how_much_was_left_out(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(diffmod, "MAX_LINES", 50)
    diff = diff_texts("", "\n".join(f"x{i} = {i}" for i in range(120)))
    assert diff["lines"] == 50
    assert diff["omitted"] == 70
    assert diff["added"] == 120, "the counts still tell the whole change"
    assert diff["fold_at"] == diffmod.FOLD_AT


def _view(number: int, kind: str, before: str, after: str, **extra: object) -> StepView:
    data: dict[str, object] = {
        "number": number,
        "id": f"s{number}",
        "kind": kind,
        "target": f"c{number}: {before}",
        "title": kind,
        "reason": "why",
        "risk": "low",
        "status": "pending",
        "error": None,
        "before": before,
        "after": after,
        "language": "python",
        "depends_on": [],
        "checkpoint": None,
        "run_at_approval": False,
    }
    data.update(extra)
    return StepView(**data)  # type: ignore[arg-type]


def test_the_view_has_header_counts_steps_checkpoints_and_revisions():
    plan = Plan(task="tidy", state="awaiting_approval")
    steps = [
        _view(1, "edit_cell", "x = 1", "x = 2"),
        _view(2, "insert_cell", "", "import pandas as pd\ndf = 1", target="c9"),
        _view(3, "write_file", "", "hi", status="done", target="out.txt", language="text"),
    ]
    cp = Checkpoint(seq=1, plan=plan.id, step="s3", label="")
    view = build_view(
        plan=plan,
        steps=steps,
        checkpoints=[cp],
        mode="plan",
        backend="file",
        backend_description="file: a.ipynb",
        progress=Progress(),
        error="oops",
    )
    json.dumps(view)  # the whole view is JSON, as the trait needs
    assert view["header"]["task"] == "tidy"
    assert view["header"]["revision"] == 1
    assert view["header"]["counts"] == {"pending": 2, "approved": 0, "done": 1, "failed": 0}
    edit, insert, write = view["steps"]
    assert edit["diff"]["kind"] == "changed" and edit["cell"] is None
    assert insert["cell"] == "import pandas as pd\ndf = 1" and insert["diff"] is None
    assert insert["target"] == "c9: import pandas as pd", "an inserted cell is named by its code"
    assert write["diff"]["kind"] == "added"
    assert view["checkpoints"][0]["label"] == "before step 3"
    assert view["revisions"] == [{"number": 1, "summary": "", "feedback": None, "steps": 0}]
    assert view["error"] == "oops"
    assert view["progress"]["running"] is False


def test_no_plan_gives_an_empty_idle_view():
    view = build_view(plan=None, steps=[])
    assert view["steps"] == [] and view["header"]["state"] == "idle"


def _step(op: object, reason: str = "r", step_id: str | None = None) -> Step:
    data: dict[str, object] = {"operation": op, "reason": reason, "base": "absent"}
    if step_id:
        data["id"] = step_id
    return Step.model_validate(data)


def test_revision_diff_says_which_steps_were_added_removed_changed_or_kept():
    keep = _step(EditCell(cell_id="c1", source="x = 2"), step_id="k")
    change = _step(WriteFile(path="a.txt", content="one\n"), step_id="w")
    gone = _step(InsertCell(cell_id="n1", source="print(1)"), step_id="g")
    plan = Plan(revisions=[Revision(number=1, steps=[keep, change, gone])])
    redrafted = _step(WriteFile(path="a.txt", content="two\n"), step_id="w2")
    new = _step(InsertCell(cell_id="n2", source="plot()"))
    plan.revisions.append(Revision(number=2, parent=1, steps=[keep, redrafted, new]))
    out = revision_diff(plan, 1, 2)
    got = [(c["change"], c["kind"], c["target"]) for c in out["changes"]]
    assert got == [
        ("same", "edit_cell", "c1"),
        ("changed", "write_file", "a.txt"),
        ("added", "insert_cell", "n2"),
        ("removed", "insert_cell", "n1"),
    ]
    changed = unified_text(out["changes"][1]["diff"])
    assert "-one" in changed and "+two" in changed


def test_reorder_becomes_the_fewest_moves_and_refuses_a_bad_order():
    pending = dict.fromkeys("abcd", "pending")
    assert moves_for(list("abcd"), list("abcd"), pending) == []
    assert moves_for(list("abcd"), list("dabc"), pending) == [(4, 1)]
    assert moves_for(list("abcd"), list("acdb"), pending) == [(3, 2), (4, 3)]
    with pytest.raises(UsageMistake, match="exactly the plan's steps"):
        moves_for(list("abc"), list("abx"), pending)
    with pytest.raises(UsageMistake, match="exactly the plan's steps"):
        moves_for(list("abc"), list("aab"), pending)
    with pytest.raises(UsageMistake, match="step 3 is done"):
        moves_for(list("abc"), list("cab"), {**pending, "c": "done"})


def test_messages_parse_into_actions_and_bad_ones_say_what_is_wrong():
    approve = {"action": "approve", "step_ids": ["a"], "revision": 2, "shown": {"a": "h"}}
    assert parse(approve) == Approve(
        action="approve", step_ids=("a",), revision=2, shown={"a": "h"}
    )
    shown = parse({"action": "show_revision_diff", "from": 1, "to": 2})
    assert isinstance(shown, ShowRevisionDiff) and (shown.from_, shown.to) == (1, 2)
    for bad, where in [
        ({"action": "launch"}, "does not match"),
        ({"action": "approve", "step_ids": [], "revision": 1, "shown": {}}, "approve.step_ids"),
        ({"action": "approve", "step_ids": ["a"], "shown": {}}, "approve.revision"),
        ({"action": "approve", "step_ids": ["a"], "revision": 1}, "approve.shown"),
        ({"action": "revise", "feedback": "", "revision": 1}, "revise.feedback"),
        ({"action": "stop", "now": True}, "stop.now"),
        ("approve", "valid dictionary"),
    ]:
        with pytest.raises(BadMessage, match=where):
            parse(bad)


def test_a_shell_step_shows_its_command_as_the_cell():
    step = _view(1, "shell", "", "", target="ls -la data/", language="shell")
    shown = build_view(plan=Plan(), steps=[step])["steps"][0]
    assert shown["cell"] == "ls -la data/" and shown["diff"] is None
