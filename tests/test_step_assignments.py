"""Saves reuse the dumps of steps nobody assigned to since the last save, told by a count of
assignments kept for all steps together (``ASSIGNMENTS``), and the dumps of plans nothing in
which changed, told by a journal of the changes of plans, revisions and their lists
(``HOLDERS``; both are a ``Journal``, model/tracked.py): several sessions at once (an MCP
endpoint serving many notebooks, a preview on its own thread) assign to their steps from
several threads, and a save must still hold every status of its own plan.
"""

from __future__ import annotations

import gc
import json
import operator
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import repeat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planbook.documents.file import FileNotebook
from planbook.engine.plan_dumps import PlanDumps
from planbook.model import tracked as tracked_module
from planbook.model.plan import ASSIGNMENTS, Plan, Revision, Step, StepResult
from planbook.model.tracked import HOLDERS, KEPT, Journal, Prefix, TrackedList
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.conftest import make_notebook


@pytest.fixture(autouse=True)
def switch_often() -> Iterator[None]:
    """Threads switch every microsecond instead of every 5 ms: a thread is stopped between
    the two updates of an assignment far more often (the races these tests look for)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def open_session(path: Path) -> Session:
    return Session(FileNotebook(path), Workspace(path.parent))


@contextmanager
def changing_elsewhere(change: Callable[[int], object]) -> Iterator[None]:
    """``change(0)``, ``change(1)``, ... on another thread, without a pause, until the block
    ends (another notebook's session changing its own plans)."""
    stop = threading.Event()

    def elsewhere() -> None:
        i = 0
        while not stop.is_set():
            change(i)
            i += 1

    thread = threading.Thread(target=elsewhere)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def test_a_save_holds_every_status_while_another_notebook_assigns_from_a_thread(
    tmp_path: Path,
) -> None:
    path = make_notebook(tmp_path / "mine.ipynb", [f"v{i} = {i}" for i in range(10)])
    other = make_notebook(tmp_path / "other.ipynb", ["w = 1"])
    mine, theirs = open_session(path), open_session(other)
    for k in range(60):
        mine.propose.edit_cell(f"c{k % 10 + 1}", f"v = {k}", reason="r")
    busy = theirs.propose.edit_cell("c1", "w = 2", reason="r")
    # another notebook's steps, assigned to without a pause
    with changing_elsewhere(lambda i: setattr(busy, "reason", f"r{i}")):
        for _ in range(6):
            assert mine.approve(first=10).ok
    saved = json.loads(path.read_text())["metadata"]["planbook"]["plans"]
    (plan,) = saved.values()
    statuses = [s["status"] for s in plan["revisions"][-1]["steps"]]
    assert statuses == [s.status for s in mine.current_plan().steps] == ["done"] * 60


#: Each way to change a list in place, with what it leaves (from [1, 2, 3]).
IN_PLACE: list[tuple[str, Any, list[int]]] = [
    ("append", lambda xs: xs.append(4), [1, 2, 3, 4]),
    ("extend", lambda xs: xs.extend([4, 5]), [1, 2, 3, 4, 5]),
    ("insert", lambda xs: xs.insert(0, 0), [0, 1, 2, 3]),
    ("pop", lambda xs: xs.pop(), [1, 2]),
    ("pop(0)", lambda xs: xs.pop(0), [2, 3]),
    ("remove", lambda xs: xs.remove(2), [1, 3]),
    ("clear", lambda xs: xs.clear(), []),
    ("sort", lambda xs: xs.sort(reverse=True), [3, 2, 1]),
    ("reverse", lambda xs: xs.reverse(), [3, 2, 1]),
    ("item set", lambda xs: xs.__setitem__(1, 9), [1, 9, 3]),
    ("slice set", lambda xs: xs.__setitem__(slice(None), [7]), [7]),
    ("item deleted", lambda xs: xs.__delitem__(0), [2, 3]),
    ("slice deleted", lambda xs: xs.__delitem__(slice(1, None)), [1]),
    ("+=", lambda xs: xs.__iadd__([4]), [1, 2, 3, 4]),
    ("*=", lambda xs: xs.__imul__(2), [1, 2, 3, 1, 2, 3]),
]


@pytest.mark.parametrize(("how", "change", "left"), IN_PLACE, ids=[c[0] for c in IN_PLACE])
def test_every_change_in_place_of_a_plans_list_is_noted(
    how: str, change: Callable[[list[int]], object], left: list[int]
) -> None:
    """A save writes again only the plans whose parts noted a change (model/tracked.py): a
    list of a plan's that changed without a note would leave the file behind memory."""
    items = TrackedList([1, 2, 3])
    then = HOLDERS.count
    change(items)
    now, changed = HOLDERS.since(then)
    assert items == left and type(items) is TrackedList
    assert changed is not None and now > then and all(c is items for c in changed), how


#: The changes that leave a list's first items where they were: at its end only.
AT_THE_END = {"append", "extend", "+="}


@pytest.mark.parametrize(("how", "change", "left"), IN_PLACE, ids=[c[0] for c in IN_PLACE])
def test_a_list_seen_still_starts_with_what_was_seen_only_after_changes_at_its_end(
    how: str, change: Callable[[list[int]], object], left: list[int]
) -> None:
    """A reader that saw a plan's steps (the projection, the open steps, the plan's dumps)
    asks whether they are still the first ones without a look at each (``Prefix``): only an
    append, an extend or ``+=`` leaves that so, and every other change says no, even one
    that leaves the first items where they were (``*=`` repeats them after)."""
    items = TrackedList([1, 2, 3])
    seen = Prefix(items)
    change(items)  # type: ignore[arg-type]
    assert seen.starts(items) is (how in AT_THE_END), how
    assert Prefix(items).starts(items)  # seen again: the list as it is now
    assert not seen.starts(TrackedList(items)), "another list, with the same items"


#: What a sequence of changes does to a list: the change and an index (or a count).
LIST_CHANGES = st.lists(
    st.tuples(
        st.sampled_from([c[0] for c in IN_PLACE] + ["look", "sort sorted"]), st.integers(0, 5)
    ),
    max_size=30,
)


def _change(xs: list[int], how: str, n: int, made: Iterator[int]) -> None:
    """``xs`` changed in place the way ``how`` names, new items drawn from ``made``."""
    if how == "append":
        xs.append(next(made))
    elif how == "extend":
        xs.extend([next(made) for _ in range(n)])
    elif how == "+=":
        xs += [next(made)]
    elif how == "insert":
        xs.insert(n, next(made))
    elif how == "pop" and xs:
        xs.pop()
    elif how == "pop(0)" and xs:
        xs.pop(0)
    elif how == "remove" and xs:
        xs.remove(xs[n % len(xs)])
    elif how == "clear":
        xs.clear()
    elif how == "sort":
        xs.sort(reverse=bool(n % 2))
    elif how == "sort sorted":  # the same order: nothing moves
        order = [*xs]
        xs.sort(key=order.index)
    elif how == "reverse":
        xs.reverse()
    elif how == "item set" and xs:
        xs[n % len(xs)] = next(made)
    elif how == "slice set":
        xs[n:] = [next(made)]
    elif how == "item deleted" and xs:
        del xs[n % len(xs)]
    elif how == "slice deleted":
        del xs[n:]
    elif how == "*=":
        xs *= 1 + n % 2


@settings(max_examples=200, deadline=None)
@given(LIST_CHANGES)
def test_a_prefix_is_never_said_to_stand_when_it_does_not(changes: list[tuple[str, int]]) -> None:
    """Any sequence of changes, with looks between them: a look that says the first items
    are those seen is right (the very objects, in order), and after changes at the end
    alone it says so, on a tracked list in O(1) and on a plain one by comparing."""
    made = iter(range(10**6))
    tracked_items: TrackedList[int] = TrackedList([next(made) for _ in range(3)])
    plain = list(tracked_items)
    looks = [(Prefix(tracked_items), Prefix(plain), list(tracked_items), True)]
    for how, n in changes:
        if how == "look":
            looks.append((Prefix(tracked_items), Prefix(plain), list(tracked_items), True))
            continue
        before = list(tracked_items)
        _change(tracked_items, how, n, made)
        plain[:] = tracked_items  # the plain list follows, so both hold the same objects
        at_end = how in AT_THE_END
        looks = [
            (t, p, was, kept and at_end and tracked_items[: len(before)] == before)
            for t, p, was, kept in looks
        ]
        for tracked_look, plain_look, was, only_appended in looks:
            really = len(tracked_items) >= len(was) and all(
                a is b for a, b in zip(tracked_items, was, strict=False)
            )
            assert not tracked_look.starts(tracked_items) or really, (how, was)
            assert plain_look.starts(plain) is really, (how, was)
            if only_appended:
                assert tracked_look.starts(tracked_items), (how, was)


def test_a_rewrite_stored_late_never_brings_back_the_mark_a_reader_saw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Three threads rewrite one list. The first is held in the middle of its rewrite, once
    the change is made and before its mark is stored; meanwhile a second rewrites, a reader
    takes a ``Prefix``, and a third rewrites. When the first stores its mark at last, the
    reader must not be told the list is as it saw it: a mark made as the last one plus one
    came back to the very mark the reader saw."""
    items: TrackedList[int] = TrackedList([1, 2, 3])
    holding, release = threading.Event(), threading.Event()
    late: list[threading.Thread] = []
    real_note, real_rewrites = HOLDERS.note, tracked_module.rewrites

    def held_once() -> None:
        if threading.current_thread() in late and not holding.is_set():
            holding.set()
            assert release.wait(10)

    def note(changed: object) -> int:
        number = real_note(changed)
        held_once()
        return number

    def rewrites(of: TrackedList[Any]) -> int:
        mark = real_rewrites(of)
        held_once()
        return mark

    # wherever the rewrite reads what it stores: the journal's number, or the last mark
    monkeypatch.setattr(HOLDERS, "note", note)
    monkeypatch.setattr(tracked_module, "rewrites", rewrites)
    first = threading.Thread(target=items.__setitem__, args=(0, 9))
    late.append(first)
    first.start()
    assert holding.wait(10)
    items[1] = 8  # the second
    seen = Prefix(items)
    items[2] = 7  # the third, after the reader looked
    release.set()
    first.join(10)
    assert items == [9, 8, 7]
    assert not seen.starts(items)


def test_a_plans_lists_are_tracked_however_they_are_set() -> None:
    """Made, validated from a stored dump, assigned, or copied deep: each list a plan's
    dump is made of notes its changes."""
    plan = Plan()
    loaded = Plan.model_validate(plan.model_dump(mode="json"))
    assigned = Plan()
    assigned.results = []
    assigned.revisions = [Revision(number=1, steps=[])]
    copied = plan.model_copy(deep=True)
    for each in (plan, loaded, assigned, copied):
        lists = [each.revisions, each.approvals, each.results, each.revisions[0].steps]
        assert [type(x) for x in lists] == [TrackedList] * 4


def _set_reason(i: int, step: Step) -> None:
    step.reason = str(i)


def _holders_oldest_first(then: int) -> tuple[int, list[object] | None]:
    now, window = HOLDERS.since(then)  # the latest first: a save looks at each of them
    return now, None if window is None else window[::-1]


#: The two journals a save reads: the objects one thread changes, how, and how a save asks
#: what changed since then (the objects each once, oldest first).
JOURNALS: dict[str, tuple[Journal[Any], Callable[[], Any], Callable[[int, Any], object], Any]] = {
    "steps' assignments": (
        ASSIGNMENTS,
        lambda: Step.model_construct(reason="r"),
        _set_reason,
        Step.assigned_since,
    ),
    "plans' holders": (
        HOLDERS,
        TrackedList,
        lambda i, items: items.append(i),
        _holders_oldest_first,
    ),
}


@pytest.mark.parametrize("journal", list(JOURNALS))
def test_a_reader_gets_exactly_the_objects_changed_while_a_thread_changes_them(
    journal: str,
) -> None:
    """A reader asking "which objects changed since then?" (a save: which steps were
    assigned to, which plans' lists changed) while another thread changes them gets exactly
    those: never a count that is ahead of the objects kept."""
    kept, make, change, since = JOURNALS[journal]
    objects = [make() for _ in range(20_000)]
    base = kept.count
    done = threading.Event()

    def changing() -> None:
        for i, each in enumerate(objects):
            change(i, each)
        done.set()

    thread = threading.Thread(target=changing)
    thread.start()
    wrong = 0
    try:
        while not done.is_set():
            then = kept.count - 1
            now, window = since(then)
            if then < base:
                continue
            # None: more than KEPT since then, no longer all kept (a save looks at all)
            expected = objects[then - base : now - base] if now - then <= KEPT else None
            if window is None or expected is None:
                wrong += window is not expected
            elif len(window) != len(expected) or not all(map(operator.is_, window, expected)):
                wrong += 1
    finally:
        thread.join()
    assert wrong == 0
    assert kept.count - base == len(objects)


def test_a_save_holds_every_plan_while_another_notebook_changes_its_plans_from_a_thread(
    tmp_path: Path,
) -> None:
    """Another notebook's plans changing without a pause fill the journal of changes (more
    than it keeps between two saves here): each save still writes what this notebook's
    plans hold, past plans and the one being run."""
    path = make_notebook(tmp_path / "mine.ipynb", [f"v{i} = {i}" for i in range(10)])
    other = make_notebook(tmp_path / "other.ipynb", ["w = 1"])
    mine, theirs = open_session(path), open_session(other)
    for k in range(5):  # past plans
        mine.propose.edit_cell(f"c{k + 1}", f"p = {k}", reason="r")
        assert mine.approve().ok
    for k in range(30):
        mine.propose.edit_cell(f"c{k % 10 + 1}", f"v = {k}", reason="r")
    theirs.propose.edit_cell("c1", "w = 2", reason="r")
    busy = theirs.current_plan()
    assert busy is not None

    def change(i: int) -> None:
        busy.task = f"t{i}"
        busy.results.append(StepResult(step_id=f"s{i}", status="done"))
        busy.results.pop()

    with changing_elsewhere(change):
        for _ in range(3):
            assert mine.approve(first=10).ok
    saved = json.loads(path.read_text())["metadata"]["planbook"]["plans"]
    plans = mine.store.state.plans
    assert len(plans) == 6 and [s.status for s in plans[-1].steps] == ["done"] * 30
    assert saved == {p.id: PlanDumps().plan(p) for p in plans}  # as a fresh dump of each


def test_a_journal_names_no_object_that_is_gone() -> None:
    """The journals hold what they name weakly: an object gone is one no reader holds (a
    reader compares what it is told with its own objects, by identity), so it is left out,
    and the count still says a change was made."""
    journal: Journal[Plan] = Journal()
    kept, gone = Plan(), Plan()
    then = journal.count
    journal.note(kept)
    journal.note(gone)
    del gone
    gc.collect()
    now, changed = journal.since(then)
    assert now == then + 2
    assert changed is not None and len(changed) == 1 and changed[0] is kept


def test_a_closed_session_leaves_its_record_to_the_garbage_collector(tmp_path: Path) -> None:
    """A process that opens notebooks again and again (an MCP endpoint serving many, a kernel
    that opens its notebook anew) keeps nothing of a session it closed. The journals are the
    process's and name the objects that changed last; held strongly, they kept every record
    those were part of alive (a notebook's list of plans holds all of its plans: 29,000
    objects at each opening of a notebook with 1,000 past plans, until 1,024 changes later)."""
    path = make_notebook(tmp_path / "n.ipynb", [f"v{i} = {i}" for i in range(5)])
    steps_then, holders_then = ASSIGNMENTS.count, HOLDERS.count
    session = open_session(path)
    for k in range(3):
        session.propose.edit_cell("c1", f"v = {k}", reason="r")
        assert session.approve().ok
    state = session.store.state
    plan = state.plans[-1]
    parts = [state, state.plans, plan, plan.results, plan.steps[0], state.checkpoints]
    # the journals name them: the plans' list, the plan's results and its step changed
    named = [*(ASSIGNMENTS.since(steps_then)[1] or ()), *(HOLDERS.since(holders_then)[1] or ())]
    assert all(any(map(operator.is_, named, repeat(p))) for p in (state.plans, plan.results))
    assert any(map(operator.is_, named, repeat(plan.steps[0])))
    held = [weakref.ref(part) for part in parts]
    del state, plan, parts, named
    session.close()
    del session
    gc.collect()
    assert [ref() for ref in held] == [None] * len(held)


def test_opening_a_notebook_again_and_again_does_not_grow_the_process(tmp_path: Path) -> None:
    """What a person sees in a long-lived process: the same notebook with 30 past plans
    opened, changed and closed again and again keeps no plan, step or list of a session it
    closed (each opening kept one more before, and 301 objects in all with it)."""
    path = make_notebook(tmp_path / "n.ipynb", [f"v{i} = {i}" for i in range(5)])
    session = open_session(path)
    for k in range(30):
        session.propose.edit_cell(f"c{k % 5 + 1}", f"v = {k}", reason="r")
        assert session.approve().ok
    session.close()

    def open_change_close() -> int:
        again = open_session(path)
        again.propose.edit_cell("c1", "v = 0", reason="r")
        again.close()
        gc.collect()
        # the record's own objects: other threads' allocations do not count
        return sum(isinstance(o, Plan | Revision | Step | TrackedList) for o in gc.get_objects())

    settled = [open_change_close() for _ in range(2)][-1]
    assert [open_change_close() - settled for _ in range(4)] == [0, 0, 0, 0]
