"""Turn a new order of steps (what a drag or a keypress produced) into Session moves.

``Session.move(number, before=m)`` moves one step; a reorder is the shortest run of those that
turns the current order into the wanted one. Checked in full before anything moves, so a bad
reorder applies nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from planbook.errors import UsageMistake

#: Only steps that have not run may move.
MOVABLE = frozenset({"pending", "skipped"})


def moves_for(
    current: Sequence[str], wanted: Sequence[str], statuses: Mapping[str, str]
) -> list[tuple[int, int]]:
    """The (number, before) moves, in order, that turn `current` into `wanted`.

    Position i is fixed in turn by moving the step that belongs there in front of the step
    that stands there; steps already in place are never touched."""
    if sorted(current) != sorted(wanted) or len(set(wanted)) != len(wanted):
        raise UsageMistake(
            "the new order does not list exactly the plan's steps; nothing was moved: "
            "the panel may be stale, re-run `%plan`"
        )
    order = list(current)
    moves: list[tuple[int, int]] = []
    for i, step_id in enumerate(wanted):
        if order[i] == step_id:
            continue
        j = order.index(step_id)
        if statuses.get(step_id) not in MOVABLE:
            raise UsageMistake(
                f"step {j + 1} is {statuses.get(step_id)}; only pending steps move; "
                "nothing was moved"
            )
        moves.append((j + 1, i + 1))
        order.insert(i, order.pop(j))
    return moves
