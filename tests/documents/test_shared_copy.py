"""documents/live/shared_copy.py on its own: what a room's copy counts, around a commit of our
own (``own_change``) and for changes that come from elsewhere."""

from __future__ import annotations

from typing import Any

from pycrdt import Array, Doc, Map

from planbook.documents.live.shared_copy import SharedCopy


def _from_elsewhere(copy: SharedCopy, change: Any) -> None:
    """``change`` made on another client's document, its update applied to ``copy``."""
    other: Doc[Any] = Doc()
    other.apply_update(copy.doc.get_update())
    before = other.get_state()
    change(other.get("cells", type=Array), other.get("meta", type=Map))
    copy.doc.apply_update(other.get_update(before))


def test_changes_from_elsewhere_are_counted_before_and_after_a_commit_of_our_own() -> None:
    copy = SharedCopy()
    with copy.doc.transaction():
        copy.cells.append(Map({"id": "a", "source": "1"}))
        copy.meta["metadata"] = Map({"planbook": Map({"x": 1})})
    cells, meta = copy.cells_version, copy.meta_version

    _from_elsewhere(copy, lambda ycells, ymeta: ycells[0].__setitem__("source", "2"))
    assert copy.cells_version == cells + 1 and copy.cells_changed_since(cells) == {0}
    _from_elsewhere(copy, lambda ycells, ymeta: ymeta["metadata"]["planbook"].__setitem__("x", 2))
    assert copy.meta_version == meta + 1

    cells, meta = copy.cells_version, copy.meta_version
    with copy.own_change(), copy.doc.transaction():
        copy.cells.append(Map({"id": "b", "source": "3"}))
        copy.meta["metadata"]["planbook"]["x"] = 3
    # moved once, as for a change of everything: readers were handed the result by the commit
    assert (copy.cells_version, copy.meta_version) == (cells + 1, meta + 1)
    assert copy.cells_changed_since(cells) is None

    cells, meta = copy.cells_version, copy.meta_version
    _from_elsewhere(copy, lambda ycells, ymeta: ycells[1].__setitem__("source", "4"))
    _from_elsewhere(copy, lambda ycells, ymeta: ymeta["metadata"]["planbook"].__setitem__("x", 5))
    assert copy.cells_version == cells + 1 and copy.cells_changed_since(cells) == {1}
    assert copy.meta_version == meta + 1
