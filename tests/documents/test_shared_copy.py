"""documents/live/shared_copy.py on its own: what a room's copy counts, around a commit of our
own (``own_change``) and for changes that come from elsewhere."""

from __future__ import annotations

from typing import Any

from pycrdt import Array, Doc, Map

from planbook.documents.live.shared_copy import SharedCopy, merged_update


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


def test_a_commit_of_our_own_sends_its_own_transactions_and_nothing_else() -> None:
    """The update a commit sends is its transactions' own (pycrdt encodes each at its
    commit), not a diff of the whole copy: another client that has everything before it ends
    up with the same document, and a change from elsewhere is never sent back as ours."""
    copy = SharedCopy()
    with copy.doc.transaction():
        copy.cells.extend([Map({"id": f"c{i}", "source": "x = 1\n" * 50}) for i in range(200)])
        copy.meta["metadata"] = Map({"planbook": Map({"x": 1})})
    peer: Doc[Any] = Doc()
    peer.apply_update(copy.doc.get_update())

    _from_elsewhere(copy, lambda ycells, ymeta: ycells[0].__setitem__("source", "theirs"))
    with copy.own_change() as updates:
        with copy.doc.transaction():
            copy.cells.insert(1, Map({"id": "new", "source": "mine"}))
        with copy.doc.transaction():  # a second transaction: both are sent, as one update
            copy.meta["metadata"]["planbook"]["x"] = 2
    assert len(updates) == 2
    ours = merged_update(updates)
    assert len(ours) < len(copy.doc.get_update()) / 20  # the change, not the notebook

    peer.apply_update(ours)
    peer_cells = peer.get("cells", type=Array)
    assert [c["id"] for c in peer_cells][:3] == ["c0", "new", "c1"]
    assert peer.get("meta", type=Map)["metadata"]["planbook"]["x"] == 2
    assert peer_cells[0]["source"] != "theirs"  # theirs is not in our update
    # with theirs too, the peer holds exactly what the copy holds
    peer.apply_update(copy.doc.get_update(peer.get_state()))
    assert peer.get("cells", type=Array).to_py() == copy.cells.to_py()
    assert merged_update([]) == b"" and merged_update(updates[:1]) == updates[0]

    with copy.doc.transaction():  # outside a commit of our own: nothing is collected
        copy.meta["metadata"]["planbook"]["x"] = 3
    assert len(updates) == 2
