"""The live backend writes planbook metadata by difference (issue 10 item 8): whatever sequence
of changes, the shared document reads back exactly as the same changes made to plain JSON
(``apply_metadata_changes``, what the file backend does), and a change to one step of a long
plan sends an update whose size does not grow with the plan. No server: a local pycrdt
document, which is what the room's copy is."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pycrdt import Doc, Map

from planbook.documents.base import DELETE, apply_metadata_changes
from planbook.documents.live.convert import json_ints
from planbook.documents.live.metadata import apply_parts

KEYS = st.sampled_from(["a", "b", "plans", "steps", "status"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=3))
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=12,
)
CHANGES = st.dictionaries(
    st.lists(KEYS, min_size=1, max_size=3).map(tuple),
    st.one_of(JSON, st.just(DELETE)),
    min_size=1,
    max_size=3,
)


def _read(meta: Map[Any]) -> Any:
    value = meta["metadata"]["planbook"]
    return json_ints(value.to_py() if hasattr(value, "to_py") else value)


@settings(max_examples=150, deadline=None)
@given(st.lists(CHANGES, min_size=1, max_size=8))
def test_the_shared_document_reads_back_as_the_same_changes_on_json(
    sequence: list[dict[tuple[str, ...], Any]],
) -> None:
    doc: Doc[Any] = Doc()
    meta = doc.get("meta", type=Map)
    view: Any = None
    reference: Any = None
    for changes in sequence:
        with doc.transaction():
            # the backend keeps values as given: hand it its own copies (as the store does)
            own = {p: v if v is DELETE else copy.deepcopy(v) for p, v in changes.items()}
            view = apply_parts(meta, "planbook", own, view)
        reference = apply_metadata_changes(reference, changes)
        assert view == reference  # what the backend believes it wrote
        assert _read(meta) == reference  # what the document holds


def _plan(steps: int, done: int) -> dict[str, Any]:
    return {
        "id": "p1",
        "state": "executing",
        "revisions": [
            {
                "number": 1,
                "steps": [
                    {
                        "id": f"s{i}",
                        "status": "done" if i < done else "approved",
                        "operation": {"kind": "insert_cell", "source": f"v{i} = {i}" * 5},
                    }
                    for i in range(steps)
                ],
            }
        ],
        "results": [{"step_id": f"s{i}", "status": "done", "seconds": 0.01} for i in range(done)],
    }


def test_a_step_of_a_long_plan_sends_only_what_changed() -> None:
    doc: Doc[Any] = Doc()
    meta = doc.get("meta", type=Map)
    view: Any = None
    sizes = []
    for done in range(0, 201):
        before = doc.get_state()
        with doc.transaction():
            view = apply_parts(meta, "planbook", {("plans", "p1"): _plan(200, done)}, view)
        sizes.append(len(doc.get_update(before)))
    whole = len(doc.get_update(Doc().get_state()))
    # the first writes are whole (an entry becomes shared parts when written again); after
    # that a step sends its status and its result, whatever the length of the plan
    assert max(sizes[10:]) < 400 < whole / 50, (sizes[:12], max(sizes[10:]), whole)
    assert _read(meta) == {"plans": {"p1": _plan(200, 200)}}


def _replaced(value: Any, path: list[int], leaf: Any) -> Any:
    """``value`` with the part ``path`` leads to (each number picks a child, modulo how many
    there are) replaced by ``leaf``: new containers along the path, every other part the very
    object it was (how the store hands the backend a plan after one step changed)."""
    if not path or not isinstance(value, dict | list) or not value:
        return leaf
    if isinstance(value, list):
        i = path[0] % len(value)
        return [*value[:i], _replaced(value[i], path[1:], leaf), *value[i + 1 :]]
    key = sorted(value)[path[0] % len(value)]
    return {**value, key: _replaced(value[key], path[1:], leaf)}


@settings(max_examples=150, deadline=None)
@given(
    JSON,
    st.lists(st.tuples(st.lists(st.integers(0, 7), max_size=4), JSON), min_size=1, max_size=8),
)
def test_a_value_changed_in_one_part_the_rest_shared_reads_back_as_written(
    first: Any, edits: list[tuple[list[int], Any]]
) -> None:
    """The parts that are the very objects written last time are passed over unread; the
    document still reads back as each new value, whichever part changed (or none)."""
    doc: Doc[Any] = Doc()
    meta = doc.get("meta", type=Map)
    value = {"steps": [first, copy.deepcopy(first)], "state": "approved"}
    with doc.transaction():
        view = apply_parts(meta, "planbook", {("plans", "p1"): value}, None)
    for path, leaf in edits:
        value = _replaced(value, path, leaf)
        with doc.transaction():
            view = apply_parts(meta, "planbook", {("plans", "p1"): value}, view)
        assert _read(meta) == {"plans": {"p1": json_ints(value)}}
