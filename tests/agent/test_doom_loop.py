"""The doom-loop guard refuses the third identical call."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from planbook.engine.doom_loop import DoomLoopGuard, call_key


def test_third_identical_call_is_refused() -> None:
    guard = DoomLoopGuard()
    assert guard.record("read_cell", {"cell_id": "a"}) is None
    assert guard.record("read_cell", {"cell_id": "a"}) is None
    loop = guard.record("read_cell", '{"cell_id": "a"}')  # same call, JSON text
    assert loop is not None and loop.count == 3
    assert "Change course" in loop.message


def test_different_arguments_are_not_a_loop() -> None:
    guard = DoomLoopGuard()
    for i in range(10):
        assert guard.record("read_cell", {"cell_id": str(i)}) is None


def test_interleaved_repeats_are_caught_within_the_window() -> None:
    guard = DoomLoopGuard()
    calls = [("a", {}), ("b", {}), ("a", {}), ("b", {})]
    assert all(guard.record(t, a) is None for t, a in calls)
    assert guard.record("a", {}) is not None


def test_forgive_lets_the_person_continue() -> None:
    guard = DoomLoopGuard()
    guard.record("ls", {"p": 1})
    guard.record("ls", {"p": 1})
    assert guard.record("ls", {"p": 1}) is not None
    guard.forgive("ls", {"p": 1})
    assert guard.record("ls", {"p": 1}) is None


@given(st.dictionaries(st.text(max_size=5), st.integers(), max_size=5))
def test_key_ignores_argument_order(args: dict[str, int]) -> None:
    reversed_args = dict(reversed(list(args.items())))
    assert call_key("t", args) == call_key("t", reversed_args)
