"""What the others made of the text a commit rewrote, rebuilt without the commit.

Text CRDTs merge, they do not conflict: an edit someone made while a step's rewrite of a cell
travelled merges with it at the server, and the cell holds their text with pieces of the step's.
A ``SourceWatch`` keeps, for each cell a transaction rewrites, the shared text, what the
document held before, and every update the room sends meanwhile: enough to tell whether an edit
merged, and to rebuild each target's text as the others made it (``theirs``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from planbook.documents.live.operations import Op
from planbook.documents.live.room import Room

if TYPE_CHECKING:
    from pycrdt import Doc


@dataclass
class Theirs:
    """What the others made of a transaction's targets (see ``SourceWatch.theirs``)."""

    #: each target's text as the others left it, without this transaction
    texts: dict[str, str]
    #: an edit of theirs was made on this transaction's text: it came after, it did not race
    after_ours: bool
    #: targets whose text before the transaction cannot be known to be kept or deleted by
    #: them (their edit reached the server after this one): that text, left out of ``texts``
    unknown: dict[str, str] = field(default_factory=dict)


class SourceWatch:
    """The shared text of each cell a transaction rewrites, what the document held before
    it, and every update the room sends meanwhile: enough to rebuild each target's text as
    the others made it, without this transaction."""

    def __init__(self, room: Room, ops: list[Op]) -> None:
        from pycrdt import Text  # heavy: pycrdt (the live extra)

        self.wanted: dict[str, str] = {}
        for op in ops:
            if op.kind == "replace" and op.cell is not None:
                self.wanted[op.cell.id] = op.cell.source
            elif op.kind in ("delete", "move") and op.cell_id in self.wanted:
                del self.wanted[op.cell_id]  # no longer a text edit in place
        self.room = room
        self.targets: dict[str, Any] = {}
        for ycell in room.cells if self.wanted else ():
            source = ycell.get("source")
            cell_id = str(ycell.get("id"))
            # only real text edits: an outputs-only replace leaves the text to its editors
            if isinstance(source, Text) and self.wanted.get(cell_id, str(source)) != str(source):
                self.targets[cell_id] = source
        self.before = room.doc.get_update() if self.targets else b""
        self.reloads = room.reloads  # a reload replaces the texts watched here
        self.started = time.monotonic()
        self.received: list[tuple[bool, bytes]] = []
        if self.targets:
            room.recorders.append(self.received)

    def stop(self) -> None:
        if self.received in self.room.recorders:
            self.room.recorders.remove(self.received)

    def merged(self) -> list[str]:
        """Targets whose text is not what the transaction wrote (someone's edit merged)."""
        found = []
        for cell_id, text in self.targets.items():
            try:
                now = str(text)
            except Exception:  # the cell was replaced whole (its type changed): not a merge
                continue
            if now != self.wanted[cell_id]:
                found.append(cell_id)
        return found

    def _rebuilt(self, updates: list[bytes]) -> Doc[Any]:
        """The document before this transaction plus ``updates`` (an update that builds on
        something missing here stays pending: it changes nothing)."""
        from pycrdt import Doc  # heavy: pycrdt (the live extra)

        doc: Doc[Any] = Doc()
        doc.apply_update(self.before)
        for update in updates:
            doc.apply_update(update)
        return doc

    def _texts(self, doc: Doc[Any]) -> dict[str, str]:
        from pycrdt import Array  # heavy: pycrdt (the live extra)

        return {
            str(c.get("id")): str(c.get("source", ""))
            for c in doc.get("cells", type=Array)
            if str(c.get("id")) in self.targets
        }

    def all_relayed(self, own: bytes) -> bool:
        """Whether everything the room holds came here relayed too. An answer to a sync
        request can bring a change before the server relays it; only the relay says in which
        order the server applied it (call holding the room's ``cond``)."""
        relayed = [update for was_relayed, update in self.received if was_relayed]
        return _clocks(self._rebuilt([own, *relayed]).get_state()) == _clocks(
            self.room.doc.get_state()
        )

    def theirs(self, own: bytes) -> Theirs:
        """Each target's text as the others left it: the document before this transaction
        plus what the others did since, leaving out every update that brings this client's
        items (the room's echo of this transaction; an update that builds on it cannot apply
        without it, so none of it leaks in).

        The server relays a transaction as IT applied it: a deletion of text someone deleted
        first is not in the relay. So an edit that reached the server before this one comes
        with all its deletions (exact), but one that reached it after this one (it is relayed
        after this one's echo) lacks its deletions of the text this transaction deleted:
        whether they kept that text is known nowhere. Rebuilt from the relay, a full
        replacement of theirs would come back as the old text followed by theirs. Then their
        text is the room's without this transaction's own text (what it deleted stays
        deleted), and the old text is named in ``unknown``."""
        mine = self.room.doc.client_id
        before = self._rebuilt([])
        own_clock = _clocks(before.get_state()).get(mine, 0)
        complete = self.all_relayed(own)
        with_own = self._rebuilt([own])
        seen = self._texts(with_own)
        kept: list[bytes] = []
        after_ours = echoed = late = False
        for relayed, update in self.received:
            if not relayed and complete:
                continue  # its changes come (came) relayed as well, in the server's order
            if _clocks(self._rebuilt([*kept, update]).get_state()).get(mine, 0) != own_clock:
                echoed = True  # brings this transaction's items
                continue
            with_own.apply_update(update)
            now = self._texts(with_own)
            if now != seen:  # else: only what this transaction did already (its echo)
                if self._texts(self._rebuilt([*kept, update])) == self._texts(self._rebuilt(kept)):
                    after_ours = True  # it touched only this transaction's text
                else:  # made concurrently: applied by the server after this one?
                    late = late or echoed or not relayed
                kept.append(update)
            seen = now
        texts = self._texts(self._rebuilt(kept))
        if not late:
            return Theirs(texts, after_ours)
        without_own = self._texts(self._without_own(before))
        old = self._texts(before)
        unknown = {k: old[k] for k, v in without_own.items() if texts.get(k) != v and k in old}
        return Theirs(without_own, after_ours, unknown)

    def _without_own(self, before: Doc[Any]) -> Doc[Any]:
        """The room's document now without this client's items since ``before``: everything
        the others added (what builds on this transaction's items stays pending) and every
        deletion (the room cannot say who deleted what)."""
        from pycrdt import Encoder  # heavy: pycrdt (the live extra)

        state = _clocks(before.get_state())
        state[self.room.doc.client_id] = _clocks(self.room.doc.get_state()).get(
            self.room.doc.client_id, 0
        )
        encoder = Encoder()
        encoder.write_var_uint(len(state))
        for client, clock in state.items():
            encoder.write_var_uint(client)
            encoder.write_var_uint(clock)
        return self._rebuilt([self.room.doc.get_update(encoder.to_bytes())])


def _clocks(state: bytes) -> dict[int, int]:
    """An encoded Yjs state vector (var-uint count, then client and clock) as a dict."""

    def var_uint(at: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            byte = state[at]
            value |= (byte & 0x7F) << shift
            at += 1
            if byte < 0x80:
                return value, at
            shift += 7

    count, at = var_uint(0)
    clocks = {}
    for _ in range(count):
        client, at = var_uint(at)
        clocks[client], at = var_uint(at)
    return clocks
