"""Plan mode: whatever the model calls, nothing is written; changes only become steps."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import planbook
from planbook.agent.run import plan_task
from planbook.agent.state import state_of
from planbook.agents import Call, Scripted
from tests.agent.conftest import CELLS, make_session

pytestmark = pytest.mark.anyio


def snapshot(
    session: planbook.Session, root: Path
) -> tuple[list[tuple[str, str]], dict[str, bytes]]:
    cells = [(c.id, c.source) for c in session.cells()]
    files = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    return cells, files


async def test_every_write_is_staged_and_nothing_changes(
    session: planbook.Session, tmp_path: Path
) -> None:
    before = snapshot(session, tmp_path)
    run = await plan_task(
        session,
        "clean the frame",
        model=Scripted(
            [
                ("list_cells", {}),
                ("read_cell", {"cell_id": "load"}),
                ("inspect_variable", {"name": "df"}),
                ("read_file", {"path": "notes.txt"}),
                (
                    "insert_cell",
                    {"source": "df = df.dropna()", "after": "load", "reason": "drop empty"},
                ),
                ("run_cell", {"cell_id": "$new_cell", "reason": "apply it"}),
                ("edit_cell", {"cell_id": "show", "source": "df.tail()", "reason": "see the end"}),
                ("move_cell", {"cell_id": "show", "after": None, "reason": "top"}),
                ("delete_cell", {"cell_id": "show", "reason": "not needed"}),
                ("write_file", {"path": "out.csv", "content": "a\n1\n", "reason": "export"}),
                (
                    "edit_file",
                    {
                        "path": "notes.txt",
                        "edits": [{"search": "hello", "replace": "bye"}],
                        "reason": "update",
                    },
                ),
                ("delete_file", {"path": "notes.txt", "reason": "clean up"}),
                ("shell", {"command": "touch marker", "reason": "mark"}),
                ("present_plan", {"summary": "Drop empty rows and export."}),
            ]
        ),
    )
    assert run.status == "finished", run.error
    assert snapshot(session, tmp_path) == before  # nothing written, no marker file
    plan = session.current_plan()
    assert plan is not None and plan.state == "awaiting_approval"
    assert plan.current.summary == "Drop empty rows and export."
    kinds = [s.operation.kind for s in plan.steps]
    assert kinds == [
        "insert_cell",
        "run_cell",
        "edit_cell",
        "move_cell",
        "delete_cell",
        "write_file",
        "edit_file",
        "delete_file",
        "shell",
    ]
    assert all(s.status == "pending" for s in plan.steps)
    # the run_cell step targets the cell the insert step will create
    assert plan.steps[1].operation.cell_id == plan.steps[0].operation.cell_id  # type: ignore[union-attr]
    queued = [a.message for a in run.activity if a.type == "staged"]
    assert len(queued) == 9
    answers = [
        str(p.content)
        for m in state_of(session).history
        for p in m.parts
        if getattr(p, "tool_name", None) == "write_file" and hasattr(p, "content")
    ]
    assert any(
        "NOT applied" in a and "will not exist until the person approves" in a for a in answers
    )


async def test_approving_then_applies_what_the_agent_staged(
    session: planbook.Session, tmp_path: Path
) -> None:
    await plan_task(
        session,
        "export",
        model=Scripted(
            [
                ("write_file", {"path": "out.txt", "content": "done\n", "reason": "export"}),
                ("present_plan", {"summary": "Export."}),
            ]
        ),
    )
    assert not (tmp_path / "out.txt").exists()
    report = session.approve()
    assert report.ok
    assert (tmp_path / "out.txt").read_text() == "done\n"


async def test_read_only_shell_runs_but_writers_are_refused(
    session: planbook.Session, tmp_path: Path
) -> None:
    run = await plan_task(
        session,
        "look",
        model=Scripted(
            [
                ("run_read_only_shell", {"command": "ls"}),
                ("run_read_only_shell", {"command": "touch sneaky"}),
                ("run_read_only_shell", {"command": "ls > listing.txt"}),
            ]
        ),
    )
    returns = [
        str(p.content)
        for m in state_of(session).history
        for p in m.parts
        if getattr(p, "tool_name", None) == "run_read_only_shell"
        and type(p).__name__ == "ToolReturnPart"
    ]
    assert "notes.txt" in returns[0]
    assert returns[1].startswith("not run") and returns[2].startswith("not run")
    assert not (tmp_path / "sneaky").exists() and not (tmp_path / "listing.txt").exists()
    assert run.status == "finished"


async def test_malformed_calls_go_back_to_the_model_and_never_reach_the_plan(
    session: planbook.Session,
) -> None:
    run = await plan_task(
        session,
        "x",
        model=Scripted(
            [
                ("insert_cell", {"source": 3, "reason": "wrong type"}),
                ("insert_cell", {"source": "x = 1"}),  # no reason
                Call("write_file", '{"path": "a.txt", "content": '),  # broken JSON
                ("edit_cell", {"cell_id": "no-such-cell", "source": "x", "reason": "bad id"}),
                ("write_file", {"path": "../outside.txt", "content": "x", "reason": "escape"}),
                ("todo_write", {"todos": [{"content": "x", "step_ids": ["nope"]}]}),
            ]
        ),
    )
    assert run.status == "finished", run.error
    plan = session.current_plan()
    assert plan is not None and plan.steps == []
    retries = [
        p
        for m in state_of(session).history
        for p in m.parts
        if type(p).__name__ == "RetryPromptPart" or getattr(p, "retry", None) is not None
    ]
    assert len(retries) == 6
    assert sum(1 for a in run.activity if a.message.startswith("malformed")) >= 3


async def test_inspect_variable_is_bounded_and_evaluates_nothing(
    session: planbook.Session,
) -> None:
    import pandas as pd

    state_of(session).user_ns = {"df": pd.DataFrame({"a": range(1000), "b": ["x"] * 1000})}
    await plan_task(
        session,
        "look",
        model=Scripted(
            [
                ("inspect_variable", {"name": "df"}),
                ("inspect_variable", {"name": "__import__('os').system('touch x')"}),
            ]
        ),
    )
    returns = [
        str(p.content)
        for m in state_of(session).history
        for p in m.parts
        if type(p).__name__ == "ToolReturnPart"
    ]
    assert "shape: (1000, 2)" in returns[0] and "dtypes: a: int64, b: " in returns[0]
    assert len(returns[0]) < 4200
    assert "not a plain variable name" in returns[1]


# --- whatever the model calls -------------------------------------------------------------------

_ids = st.sampled_from(["load", "show", "$new_cell", "nope"])
_paths = st.sampled_from(["notes.txt", "new.txt", "../escape.txt", "/etc/passwd", "sub/x.py"])
_text = st.text(max_size=20)
_reason = st.one_of(st.just("because"), st.none())


def _args(**fields: Any) -> st.SearchStrategy[dict[str, Any]]:
    # Sometimes drop a field or send a wrong type: malformed calls are part of the game.
    return st.fixed_dictionaries({}, optional={k: v for k, v in fields.items()}).map(
        lambda d: {k: v for k, v in d.items() if v is not None}
    )


_calls = st.one_of(
    st.tuples(
        st.just("insert_cell"), _args(source=_text, reason=_reason, after=_ids, run=st.booleans())
    ),
    st.tuples(
        st.just("edit_cell"), _args(cell_id=_ids, source=_text, reason=_reason, run=st.booleans())
    ),
    st.tuples(st.just("delete_cell"), _args(cell_id=_ids, reason=_reason)),
    st.tuples(st.just("move_cell"), _args(cell_id=_ids, after=_ids, reason=_reason)),
    st.tuples(st.just("run_cell"), _args(cell_id=_ids, reason=_reason)),
    st.tuples(st.just("write_file"), _args(path=_paths, content=_text, reason=_reason)),
    st.tuples(
        st.just("edit_file"),
        _args(path=_paths, reason=_reason, edits=st.just([{"search": "hello", "replace": "bye"}])),
    ),
    st.tuples(st.just("delete_file"), _args(path=_paths, reason=_reason)),
    st.tuples(
        st.just("shell"),
        _args(
            command=st.sampled_from(["touch marker", "rm notes.txt", "echo x > f"]), reason=_reason
        ),
    ),
    st.tuples(
        st.just("run_read_only_shell"),
        _args(
            command=st.sampled_from(
                ["touch marker", "ls", "rm -f notes.txt", "cat notes.txt | tee copy"]
            )
        ),
    ),
    st.tuples(st.just("list_cells"), st.just({})),
    st.tuples(st.just("present_plan"), _args(summary=_text)),
    st.tuples(st.just("no_such_tool"), st.just({"x": 1})),
    # asking to leave plan mode: the scripted person never accepts, so nothing may apply
    st.tuples(st.just("exit_plan"), _args(reason=_reason, mode=st.sampled_from(["act", "ask"]))),
    st.tuples(st.just("ask_user"), _args(question=_text, options=st.just(["a", "b"]))),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_calls, min_size=1, max_size=12))
def test_plan_mode_never_writes_whatever_the_model_calls(
    calls: list[tuple[str, dict[str, Any]]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "notes.txt").write_text("hello\n")
        session = make_session(root)
        before = snapshot(session, root)
        run = asyncio.run(
            plan_task(
                session,
                "anything",
                model=Scripted([Call(t, a) for t, a in calls], answers=["continue"] * 20),
            ).wait()
        )
        assert run.status in ("finished", "failed"), run.error
        assert snapshot(session, root) == before
        assert [c.id for c in session.cells()] == [c.id for c in CELLS]
        assert session.mode == "plan"
        plan = session.current_plan()
        assert plan is not None
        assert all(s.status == "pending" for s in plan.steps)


async def test_long_runs_are_not_cut_short(session: planbook.Session) -> None:
    # pydantic-ai stops a run after 50 model requests by default; planning takes more.
    calls = [("read_file", {"path": "notes.txt", "offset": i}) for i in range(70)]
    run = await plan_task(session, "look around a lot", model=Scripted(calls))
    assert run.status == "finished", run.error
    assert sum(1 for a in run.activity if a.type == "tool") == 70


async def test_a_read_only_command_given_to_shell_runs_instead_of_being_staged(
    session: planbook.Session,
) -> None:
    await plan_task(
        session,
        "x",
        model=Scripted(
            [
                ("shell", {"command": "cat notes.txt", "reason": "look"}),
                ("shell", {"command": "cat notes.txt > copy.txt", "reason": "copy"}),
            ]
        ),
    )
    returns = [
        str(p.content)
        for m in state_of(session).history
        for p in m.parts
        if type(p).__name__ == "ToolReturnPart" and getattr(p, "tool_name", None) == "shell"
    ]
    assert "ran at once" in returns[0] and "hello" in returns[0]
    assert returns[1].startswith("Queued as step 1")
    plan = session.current_plan()
    assert plan is not None and [s.operation.command for s in plan.steps] == [  # type: ignore[union-attr]
        "cat notes.txt > copy.txt"
    ]
