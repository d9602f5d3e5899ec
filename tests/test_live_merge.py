"""What a step's text rewrite and a person's concurrent edit leave, rebuilt as "their" text
(documents/live/watch.py ``SourceWatch``), on real pycrdt documents: a server document that relays
each applied update as the collaboration server does (its own transaction's update, which
leaves out a deletion already made), planbook's copy, and the person's. Both orders in which
the server can get the two edits, for arbitrary texts and edits (hypothesis)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jupyter_ydoc import YNotebook
from pycrdt import Array, Doc, Text

from planbook.documents.live.operations import Op
from planbook.documents.live.watch import SourceWatch
from planbook.model.cell import Cell

# the step's text shares no character with the text before it, so the step replaces it whole
BEFORE = st.text(alphabet="abc =1\n", min_size=1, max_size=12)
OURS = st.text(alphabet="XYZ", min_size=1, max_size=8)
INSERTED = st.text(alphabet="pqr", max_size=6)


class _Server:
    """The room on the server: applies each client's update in one transaction and relays
    what that transaction changed (pycrdt-websocket's broadcast of ``event.update``)."""

    def __init__(self, before: str) -> None:
        self.doc: Doc[Any] = Doc()
        YNotebook(self.doc).append_cell({"id": "c1", "cell_type": "code", "source": before})
        self.relays: list[bytes] = []
        self._sub = self.doc.observe(lambda event: self.relays.append(event.update))

    def client(self) -> Doc[Any]:
        doc: Doc[Any] = Doc()
        doc.apply_update(self.doc.get_update())
        return doc

    def apply(self, update: bytes) -> bytes:
        self.doc.apply_update(update)
        return self.relays[-1]


def _edit(doc: Doc[Any], change: Any) -> bytes:
    state = doc.get_state()
    with doc.transaction():
        change(doc.get("cells", type=Array)[0]["source"])
    return doc.get_update(state)


def _race(before: str, ours: str, at: int, cut: int, inserted: str, theirs_first: bool) -> Any:
    server = _Server(before)
    mine, person = server.client(), server.client()
    room = SimpleNamespace(doc=mine, cells=mine.get("cells", type=Array), recorders=[], reloads=0)
    cell = Cell(id="c1", cell_type="code", source=ours)
    watch = SourceWatch(room, [Op("replace", cell=cell, cell_id="c1")])  # type: ignore[arg-type]
    own = _edit(mine, lambda text: (text.__delitem__(slice(0, len(text))), text.insert(0, ours)))

    def their_change(text: Text) -> None:
        del text[at : at + cut]
        if inserted:
            text.insert(at, inserted)

    their = _edit(person, their_change)
    first, second = (their, own) if theirs_first else (own, their)
    for relay in (server.apply(first), server.apply(second)):  # relayed to planbook in order
        for recorder in room.recorders:
            recorder.append((True, relay))
        mine.apply_update(relay)
    room_text = str(mine.get("cells", type=Array)[0]["source"])
    assert room_text == str(server.doc.get("cells", type=Array)[0]["source"])
    return room_text, watch.merged(), watch.theirs(own)


@settings(max_examples=40, deadline=None)
@given(BEFORE, OURS, st.data(), INSERTED, st.booleans())
def test_their_text_is_theirs_and_never_holds_the_step_s(
    before: str, ours: str, data: st.DataObject, inserted: str, theirs_first: bool
) -> None:
    at = data.draw(st.integers(0, len(before)))
    cut = data.draw(st.integers(0, len(before) - at))
    if not inserted and not cut:
        return  # no edit at all
    made = before[:at] + inserted + before[at + cut :]
    room, merged, found = _race(before, ours, at, cut, inserted, theirs_first)
    if not inserted:  # they only deleted some of what the step deleted: nothing merged
        assert room == ours and not merged
        return
    assert merged == ["c1"] and not found.after_ours
    text = found.texts["c1"]
    assert not set(text) & set(ours)  # none of the step's text, in either order
    if theirs_first:  # the server relayed all of their edit: exactly their text
        assert text == made and not found.unknown
    else:
        # relayed after the step's, their edit lost its deletions of what the step deleted:
        # what they typed stays, the text before is left out and named
        assert text == inserted
        if made != inserted:
            assert found.unknown == {"c1": before}


def test_a_full_replacement_that_reaches_the_server_second_is_not_put_back_with_the_old_text() -> (
    None
):
    """The soak's mixture ("a = 1y = 'theirs'"), reduced to its cause."""
    room, _, found = _race("a = 1", "XYZ", 0, 5, "pqr", theirs_first=False)
    assert "XYZ" in room and "pqr" in room
    assert found.texts == {"c1": "pqr"}
    assert found.unknown == {"c1": "a = 1"}
