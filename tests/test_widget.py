"""The review panel's Python side: its state follows the Session, and every action message is
carried out through the Session, or refused with a clear error and nothing applied."""

from __future__ import annotations

import asyncio
import gc
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from planbook.agent.state import state_of
from planbook.model.events import Event
from planbook.sessions.session import Session
from planbook.surfaces.widget.panel import ReviewPanel
from tests.conftest import make_notebook, reopen, sources


@pytest.fixture
def staged(session: Session) -> Session:
    session.propose.edit_cell("c2", "x = 2", reason="a bigger x")
    session.propose.write_file("notes.txt", "hello\n", reason="leave a note")
    session.propose.insert_cell("y = x * 3", after="c2", reason="derive y")
    return session


@pytest.fixture
def panel(staged: Session) -> ReviewPanel:
    return ReviewPanel(staged)


def ids(panel: ReviewPanel) -> list[str]:
    return [s["id"] for s in panel.state["steps"]]


def statuses(panel: ReviewPanel) -> list[str]:
    return [s["status"] for s in panel.state["steps"]]


def shown(panel: ReviewPanel) -> dict[str, str]:
    """Each step's hash as the panel's view carries it: what the page sends with Approve."""
    return {s["id"]: s["hash"] for s in panel.state["steps"]}


def rev(panel: ReviewPanel) -> int:
    return int(panel.state["header"]["revision"])


def test_the_view_shows_the_plan_with_diffs(panel: ReviewPanel):
    view = panel.state
    assert view["header"]["counts"]["pending"] == 3
    assert view["header"]["backend"] == "file"
    edit, write, insert = view["steps"]
    assert (edit["kind"], edit["target"]) == ("edit_cell", "#2 c2: x = 1")
    assert [ln["text"] for ln in edit["diff"]["hunks"][0]["lines"]] == ["x = 1", "x = 2"]
    assert write["diff"]["kind"] == "added"
    assert insert["cell"] == "y = x * 3"
    assert view["error"] is None


def test_the_view_follows_session_events(staged: Session, panel: ReviewPanel):
    staged.propose.write_file("more.txt", "x", reason="later")
    assert len(panel.state["steps"]) == 4
    staged.skip(1)
    assert statuses(panel)[0] == "skipped"
    panel.close()
    staged.propose.write_file("after-close.txt", "x", reason="unseen")
    assert len(panel.state["steps"]) == 4, "a closed panel stops listening"


def test_approve_runs_exactly_the_selected_steps(
    staged: Session, panel: ReviewPanel, nb_path: Path
):
    edit, _, insert = ids(panel)
    panel.handle(
        {
            "action": "approve",
            "step_ids": [insert, edit],
            "revision": rev(panel),
            "shown": shown(panel),
        }
    )
    assert panel.state["error"] is None
    assert statuses(panel) == ["done", "pending", "done"]
    assert not (nb_path.parent / "notes.txt").exists()
    assert [s for _, s in sources(nb_path)] == ["import math", "x = 2", "y = x * 3", "print(x + 1)"]
    assert panel.state["progress"]["running"] is False
    assert [c["step"] for c in panel.state["checkpoints"]] == [1, 3]


def test_approve_all_then_rollback_puts_everything_back(
    staged: Session, panel: ReviewPanel, nb_path: Path
):
    before = sources(nb_path)
    panel.handle({"action": "approve_all", "revision": rev(panel), "shown": shown(panel)})
    assert statuses(panel) == ["done", "done", "done"]
    assert (nb_path.parent / "notes.txt").read_text() == "hello\n"
    first = panel.state["checkpoints"][0]["id"]
    panel.handle({"action": "rollback", "checkpoint": first})
    assert panel.state["error"] is None
    assert sources(nb_path) == before
    assert not (nb_path.parent / "notes.txt").exists()


def test_skip_unskip_reject_and_revise_go_through_the_session(staged: Session, panel: ReviewPanel):
    _, write, _ = ids(panel)
    panel.handle({"action": "skip", "step_id": write, "revision": rev(panel)})
    assert statuses(panel)[1] == "skipped"
    panel.handle({"action": "unskip", "step_id": write, "revision": rev(panel)})
    assert statuses(panel)[1] == "pending"
    panel.handle({"action": "revise", "feedback": "use a csv", "revision": rev(panel)})
    assert panel.state["header"]["revision"] == 2
    assert panel.state["revisions"][-1]["feedback"] == "use a csv"
    panel.handle({"action": "reject", "revision": rev(panel)})
    assert set(statuses(panel)) == {"rejected"}
    assert panel.state["header"]["state"] == "cancelled"
    assert panel.state["error"] is None


def test_reorder_moves_steps_into_the_wanted_order(panel: ReviewPanel):
    edit, write, insert = ids(panel)
    panel.handle({"action": "reorder", "order": [write, edit, insert], "revision": rev(panel)})
    assert panel.state["error"] is None
    assert ids(panel) == [write, edit, insert]
    assert [s["number"] for s in panel.state["steps"]] == [1, 2, 3]


def test_a_reorder_that_breaks_a_dependency_applies_nothing(staged: Session, panel: ReviewPanel):
    staged.propose.edit_file("notes.txt", [{"search": "hello", "replace": "bye"}], reason="x")
    edit, write, insert, edit_file = ids(panel)  # the file edit builds on the write (step 2)
    order = [edit, edit_file, write, insert]
    panel.handle({"action": "reorder", "order": order, "revision": rev(panel)})
    assert "before the step it builds on" in panel.state["error"]
    assert ids(panel) == [edit, write, insert, edit_file]


def test_revision_switcher_shows_what_changed(staged: Session, panel: ReviewPanel):
    panel.handle({"action": "revise", "feedback": "no notes", "revision": 1})
    staged.reject([2])
    panel.handle({"action": "show_revision_diff", "from": 1, "to": 2})
    changes = panel.state["revision_diff"]["changes"]
    assert [c["change"] for c in changes] == ["same", "same", "same"]
    panel.handle({"action": "show_revision_diff", "from": 1, "to": 9})
    assert "there is no revision 9" in panel.state["error"]
    panel.handle({"action": "show_revision_diff", "from": None, "to": None})
    assert panel.state["revision_diff"] is None


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (
            {"action": "approve", "step_ids": ["nope"], "revision": 1, "shown": {}},
            "there is no step 'nope'",
        ),
        ({"action": "skip", "step_id": "nope", "revision": 1}, "there is no step 'nope'"),
        (
            {"action": "approve_all", "revision": 7, "shown": {}},
            "changed while you looked at revision 7",
        ),
        ({"action": "reorder", "order": ["a"], "revision": 1}, "exactly the plan's steps"),
        ({"action": "approve", "revision": 1, "shown": {}}, "cannot read (approve.step_ids"),
        ({"action": "explode"}, "cannot read"),
        (["not", "an", "object"], "cannot read"),
        ({"action": "stop"}, "nothing is running"),
        ({"action": "rollback", "checkpoint": "cp-none"}, "nothing to roll back"),
    ],
)
def test_bad_messages_show_an_error_and_apply_nothing(
    panel: ReviewPanel, nb_path: Path, message: Any, error: str
):
    before_nb = nb_path.read_text()
    before_view = {k: v for k, v in panel.state.items() if k != "error"}
    panel.handle(message)
    assert error in panel.state["error"]
    assert nb_path.read_text() == before_nb
    assert {k: v for k, v in panel.state.items() if k != "error"} == before_view
    panel.handle({"action": "dismiss"})
    assert panel.state["error"] is None


def test_approving_a_skipped_step_is_refused(panel: ReviewPanel, nb_path: Path):
    _, write, _ = ids(panel)
    panel.handle({"action": "skip", "step_id": write, "revision": 1})
    panel.handle(
        {"action": "approve", "step_ids": [write], "revision": rev(panel), "shown": shown(panel)}
    )
    assert "step 2 is skipped, not pending" in panel.state["error"]
    assert not (nb_path.parent / "notes.txt").exists()


def test_on_the_kernel_loop_the_run_is_a_task_on_the_main_thread_and_stop_works(
    staged: Session, panel: ReviewPanel, nb_path: Path
):
    threads: list[str] = []
    seen_running: list[bool] = []

    def listen(event: Event) -> None:
        if event.kind == "step_started":
            threads.append(threading.current_thread().name)
            seen_running.append(panel.state["progress"]["running"])
        if event.kind == "step_finished" and len(threads) == 1:
            # A Stop arriving between steps, as the comm would deliver it.
            panel.handle({"action": "stop"})

    staged.subscribe(listen)

    async def click() -> None:
        panel.handle({"action": "approve_all", "revision": 1, "shown": shown(panel)})
        # The comm handler returns before any step runs; the steps show as queued.
        assert statuses(panel) == ["approved"] * 3
        assert [s.status for s in staged.current_plan().steps] == ["pending"] * 3
        assert panel.state["progress"]["running"] is True
        panel.handle({"action": "approve_all", "revision": 1, "shown": shown(panel)})
        assert "a run is in progress" in panel.state["error"]
        while panel.running:
            await asyncio.sleep(0.01)

    asyncio.run(click())
    assert threads == [threading.main_thread().name]
    assert seen_running == [True]
    assert statuses(panel) == ["done", "pending", "pending"]
    assert "stopped on request" in panel.state["error"]
    assert not (nb_path.parent / "notes.txt").exists()
    assert panel.state["progress"]["running"] is False


def test_a_run_started_elsewhere_shows_progress(staged: Session, panel: ReviewPanel):
    seen: list[tuple[int, int, list[str]]] = []

    def listen(event: Event) -> None:
        if event.kind == "step_finished":
            p = panel.state["progress"]
            seen.append((p["done"], p["total"], statuses(panel)))

    staged.subscribe(listen)
    staged.approve("1,2")
    # step 1 (a cell edit) is saved with step 2's checkpoint, before step 2 writes its file:
    # it is told done then, step 2 running
    assert seen == [(1, 2, ["done", "running", "pending"]), (2, 2, ["done", "done", "pending"])]
    assert panel.state["progress"]["running"] is False
    assert panel.state["header"]["counts"]["done"] == 2


def test_a_failed_step_shows_its_error(staged: Session, panel: ReviewPanel, nb_path: Path):
    (nb_path.parent / "notes.txt").write_text("someone else wrote this\n")
    _, write, _ = ids(panel)
    panel.handle({"action": "approve", "step_ids": [write], "revision": 1, "shown": shown(panel)})
    step = panel.state["steps"][1]
    assert step["status"] == "conflict"
    assert step["error"]
    assert (nb_path.parent / "notes.txt").read_text() == "someone else wrote this\n"


def test_the_front_end_is_one_module_with_a_default_render(panel: ReviewPanel):
    esm = str(panel._esm)
    assert "export default" in esm
    assert 'from "./' not in esm, "relative imports cannot load from anywidget's blob URL"
    assert "--jp-" in str(panel._css)


def test_a_message_handled_on_another_thread_still_runs_steps_on_the_main_thread(
    staged: Session, nb_path: Path
):
    """JupyterLab may send widget messages on a kernel subshell, handled on its own thread."""
    threads: list[str] = []
    staged.subscribe(
        lambda e: (
            threads.append(threading.current_thread().name) if e.kind == "step_started" else None
        )
    )

    async def main() -> None:
        panel = ReviewPanel(staged)  # made in a cell: on the main thread, inside its loop
        worker = threading.Thread(
            target=panel.handle,
            args=({"action": "approve_all", "revision": 1, "shown": shown(panel)},),
        )
        worker.start()
        await asyncio.to_thread(worker.join)
        while panel.running or panel.state["steps"][0]["status"] == "pending":
            await asyncio.sleep(0.01)
        assert statuses(panel) == ["done", "done", "done"]

    asyncio.run(main())
    assert threads == [threading.main_thread().name] * 3
    assert (nb_path.parent / "notes.txt").exists()


def test_the_agents_question_shows_in_the_panel_and_is_answered_there(
    staged: Session, panel: ReviewPanel
):
    from planbook.agent.context import decisions_of

    async def main() -> str:
        decisions = decisions_of(staged)
        future = decisions.ask("Which chart?", ["bar", "line"])
        shown = panel.state["agent"]["decisions"]
        assert [(d["id"], d["question"], d["options"]) for d in shown] == [
            ("d1", "Which chart?", ["bar", "line"])
        ]
        panel.handle({"action": "answer", "decision_id": "d9", "choice": "bar"})
        assert "no open decision 'd9'" in panel.state["error"]
        panel.handle({"action": "answer", "decision_id": "d1", "choice": "Line"})
        answer = await future
        assert panel.state["error"] is None
        assert panel.state["agent"] is None or not panel.state["agent"].get("decisions")
        return answer.choice

    assert asyncio.run(main()) == "line"


def test_agent_activity_and_todos_reach_the_view(staged: Session, panel: ReviewPanel):
    staged.events.emit(Event(kind="agent_activity", message="read cell c1"))
    todo = {"content": "load data", "status": "done", "step_ids": [], "step_numbers": [1]}
    staged.events.emit(Event(kind="todos_changed", data={"todos": [todo]}))
    agent = panel.state["agent"]
    assert agent["activity"] == ["read cell c1"]
    assert agent["todos"] == [{"text": "load data", "status": "done", "steps": [1]}]


def test_a_refused_rollback_can_be_forced(staged: Session, panel: ReviewPanel, nb_path: Path):
    _, write, _ = ids(panel)
    panel.handle({"action": "approve", "step_ids": [write], "revision": 1, "shown": shown(panel)})
    notes = nb_path.parent / "notes.txt"
    notes.write_text("edited by hand\n")
    checkpoint = panel.state["checkpoints"][0]["id"]
    panel.handle({"action": "rollback", "checkpoint": checkpoint})
    assert "changed after the step ran" in panel.state["error"]
    assert panel.state["offer"] == {"kind": "force_rollback", "checkpoint": checkpoint}
    assert notes.read_text() == "edited by hand\n"
    panel.handle({"action": "rollback", "checkpoint": checkpoint, "force": True})
    assert panel.state["error"] is None and panel.state["offer"] is None
    assert not notes.exists()


def test_revise_hands_the_feedback_to_the_agent_which_drafts_the_next_revision(
    tmp_path: Path,
):
    """With an agent configured, Revise starts its run on the kernel's loop (scripted model)."""
    import pydantic_ai.models

    from planbook.agent.run import plan_task, revise_task
    from planbook.agents import Scripted
    from planbook.documents.memory import MemoryNotebook
    from planbook.model.cell import Cell
    from planbook.workspace.files import Workspace

    pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
    session = Session(MemoryNotebook([Cell(id="c1", source="x = 1")]), Workspace(tmp_path))
    first = Scripted(
        [
            ("insert_cell", {"source": "plot(x)", "reason": "a line chart"}),
            ("present_plan", {"summary": "A line chart."}),
        ]
    )
    second = Scripted(
        [
            ("insert_cell", {"source": "bar(x)", "reason": "a bar chart"}),
            ("withdraw_step", {"step_number": 1, "reason": "not wanted"}),
            ("present_plan", {"summary": "A bar chart."}),
        ]
    )

    async def main() -> None:
        await plan_task(session, "plot x", model=first)
        state_of(session).reviser = lambda fb: revise_task(session, fb, model=second)
        panel = ReviewPanel(session)
        panel.handle({"action": "revise", "feedback": "bars please", "revision": 1})
        assert panel.state["error"] is None
        await state_of(session).run
        assert panel.state["header"]["revision"] == 2
        assert [(s["status"], s["cell"]) for s in panel.state["steps"]] == [
            ("rejected", "plot(x)"),
            ("pending", "bar(x)"),
        ]
        assert panel.state["revisions"][-1]["feedback"] == "bars please"
        assert any("bar" in line for line in panel.state["agent"]["activity"])

    asyncio.run(main())


def test_stop_agent_ends_the_agents_run_and_keeps_its_steps(tmp_path: Path):
    import pydantic_ai.models

    from planbook.agent.run import plan_task
    from planbook.agents import Call, Scripted
    from planbook.documents.memory import MemoryNotebook
    from planbook.model.cell import Cell
    from planbook.workspace.files import Workspace

    pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
    session = Session(MemoryNotebook([Cell(id="c1", source="x = 1")]), Workspace(tmp_path))
    slow = Scripted(
        [
            ("insert_cell", {"source": "plot(x)", "reason": "a chart"}),
            Call("insert_cell", {"source": "never()", "reason": "late"}, delay=60),
        ]
    )

    async def main() -> None:
        panel = ReviewPanel(session)
        run = plan_task(session, "plot x", model=slow)
        while len(panel.state["steps"]) < 1:
            await asyncio.sleep(0.01)
        assert panel.state["agent"]["running"] is True
        panel.handle({"action": "stop_agent"})
        await run
        assert run.status == "stopped"
        assert [s["cell"] for s in panel.state["steps"]] == ["plot(x)"]
        panel.handle({"action": "stop_agent"})
        assert "no agent run is in progress" in panel.state["error"]

    asyncio.run(main())


def test_during_a_run_only_small_live_updates_are_sent(staged: Session, panel: ReviewPanel):
    sent: list[str] = []
    panel.observe(lambda change: sent.append(change["name"]), names=["view", "live"])
    panel.handle({"action": "approve_all", "revision": 1, "shown": shown(panel)})
    assert sent.count("view") == 2, "the whole view: once when the run starts, once at its end"
    assert sent.count("live") > 6, "statuses and progress as they happen"
    assert panel.live == {}, "the final view needs no overrides"
    assert statuses(panel) == ["done", "done", "done"]


def test_approving_a_step_without_the_step_it_builds_on_applies_nothing(
    staged: Session, panel: ReviewPanel, nb_path: Path
):
    staged.propose.edit_file("notes.txt", [{"search": "hello", "replace": "bye"}], reason="x")
    before = nb_path.read_text()
    *_, edit_file = ids(panel)  # edits the file that step 2 writes
    panel.handle(
        {"action": "approve", "step_ids": [edit_file], "revision": 1, "shown": shown(panel)}
    )
    assert "builds on step 2" in panel.state["error"]
    assert nb_path.read_text() == before
    assert not (nb_path.parent / "notes.txt").exists()
    assert statuses(panel) == ["pending"] * 4


def test_a_newer_panel_supersedes_the_older_one_which_stops_growing(staged: Session, nb_path: Path):
    first = ReviewPanel.for_session(staged)
    first.deselected = [first.state["steps"][1]["id"]]
    second = ReviewPanel.for_session(staged)
    assert second is not first and first.superseded and not second.superseded
    assert second.deselected == first.deselected, "the unticked steps carry over"
    assert first.state == {}, "the old panel lets its view go: its page shows one line"
    shown = len(second.state["steps"])
    staged.propose.write_file("later.txt", "x\n", reason="a later step")
    assert first.state == {}, "the old panel no longer follows the plan"
    assert len(second.state["steps"]) == shown + 1
    first.close()
    second.close()
    third = ReviewPanel.for_session(staged)
    assert third is not second and third.state["steps"]


def test_showing_a_long_plan_again_and_again_does_not_keep_a_copy_each_time(tmp_path: Path):
    """Each ``%plan`` shows a new panel and replaces the last: a kernel that showed a 100-step
    plan twenty times held twenty copies of its view (about 1.9 MB each) before."""
    nb = make_notebook(tmp_path / "long.ipynb", [f"x{i} = {i}\n" * 20 for i in range(50)])
    session = reopen(nb)
    for i in range(100):
        session.propose.edit_cell(f"#{i % 50 + 1}", f"y{i} = {i}\n" * 20, reason=f"step {i}")
    ReviewPanel.for_session(session)
    gc.collect()
    tracemalloc.start()
    try:
        ReviewPanel.for_session(session)  # the view of the panel shown now, traced
        gc.collect()
        one_view = tracemalloc.get_traced_memory()[0]
        for _ in range(20):
            latest = ReviewPanel.for_session(session)
        gc.collect()
        twenty_more = tracemalloc.get_traced_memory()[0] - one_view
    finally:
        tracemalloc.stop()
    assert len(latest.state["steps"]) == 100
    assert one_view > 500_000, "the plan's view is big enough to tell"
    assert twenty_more < one_view / 4, (twenty_more, one_view)


def test_a_replaced_panel_still_carries_out_a_late_message_and_keeps_no_view(
    staged: Session, nb_path: Path, caplog: pytest.LogCaptureFixture
):
    """A click sent before the page heard of the newer panel is carried out (it names the
    hashes it was shown); its result shows in the newer panel, never in a view rebuilt in
    the old one, and a refusal goes to the kernel's log."""
    first = ReviewPanel.for_session(staged)
    edit, *_ = ids(first)
    sent = {"action": "approve", "step_ids": [edit], "revision": rev(first), "shown": shown(first)}
    second = ReviewPanel.for_session(staged)
    first.handle(sent)
    assert statuses(second)[0] == "done"
    assert sources(nb_path)[1] == ("c2", "x = 2")
    first.handle({"action": "approve", "step_ids": ["nope"], "revision": 1, "shown": {}})
    assert first.state == {}
    assert "a replaced review panel's action" in caplog.text
    assert statuses(second)[1:] == ["pending", "pending"]


def test_while_a_panel_runs_steps_showing_the_plan_again_reuses_it(staged: Session):
    first = ReviewPanel.for_session(staged)
    first._progress.running = True  # as during its own run, before the run's events arrive
    try:
        assert ReviewPanel.for_session(staged) is first and not first.superseded
    finally:
        first._progress.running = False
