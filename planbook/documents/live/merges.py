"""Late-merge watching: the text rewrites of recent commits, watched for someone's edit that
merged with them at the server, and what to do when one did.

Right after a commit that rewrote a cell's text, one more look: an edit that merged is put
back as they made it and the step becomes a conflict (``take_back_if_merged``). An edit made
before the commit can still reach the server after that look (a network's delay): the watch
lingers, and ``late_merges`` reports such edits later, for the caller to put back with its
record of the change.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass

from planbook.documents.live.operations import Op
from planbook.documents.live.room import Room
from planbook.documents.live.watch import SourceWatch
from planbook.errors import ConflictError


@dataclass(frozen=True)
class LateMerge:
    """An edit that raced a committed text rewrite and reached the server after the commit
    looked (see ``LiveNotebook.late_merges``)."""

    cell_id: str
    #: the cell's text as they made it, without the commit's change
    text: str
    #: the text before the commit, when whether they kept it cannot be known (left out)
    unknown: str | None = None

    def message(self) -> str:
        """The conflict's one line."""
        return merge_message(self.cell_id, self.unknown)


def merge_message(cell_id: str, unknown: str | None) -> str:
    """The conflict's one line for an edit of ``cell_id`` that merged with a step's."""
    return (
        f"cell {cell_id!r} was edited by someone else while this step changed it; the cell "
        "keeps their text and none of the step's"
        + (
            " (their edit reached the server just after the step's, so whether they kept the "
            f"text the step replaced, {_excerpt(unknown)}, cannot be known: it is left out)"
            if unknown
            else ""
        )
        + ": review the cell and re-plan"
    )


def _excerpt(text: str, limit: int = 60) -> str:
    """``text`` quoted on one line, cut to about ``limit`` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


class MergeWatches:
    """The watches of one document's recent text rewrites (see the module's docstring)."""

    #: Watches kept for ``late_merges`` at most (the oldest end first), and for how long
    #: after their commit (seconds): a person's edit is on the network for less than that.
    LINGERING_AT_MOST = 8
    LINGER_FOR = 5.0

    #: How long a merge's put-back waits for the server to relay what a sync brought (the
    #: relay tells in which order the server applied the edits), in seconds.
    RELAY_WAIT = 2.0

    def __init__(self, room: Room, *, put_back: Callable[[], None]) -> None:
        self._room = room
        #: Called (holding the room's ``cond``) once their text was put back in the room.
        self._put_back = put_back
        #: Watches of text rewrites found unmerged at commit, kept until ``late_merges``: an
        #: edit made on the text before can still reach the server after that look.
        self._lingering: list[tuple[SourceWatch, bytes]] = []

    def start(self, ops: list[Op]) -> SourceWatch:
        """A watch of the texts ``ops`` rewrite (call holding the room's ``cond``, before the
        ops are applied); the lingering watches of those cells end."""
        self._forget(ops)
        return SourceWatch(self._room, ops)

    def take_back_if_merged(self, watch: SourceWatch, own: bytes, timeout: float) -> None:
        """An edit someone made while this change travelled merges with it at the server
        (text CRDTs merge, they do not conflict): the cell would hold their text with pieces
        of ours. Look once more; if a target's text is not what this change wrote, put back
        the text as they made it (the document before this change plus their updates) and
        report a conflict. ``timeout``: for each round trip to the room."""
        from jupyter_ydoc import YNotebook  # heavy: jupyter_ydoc (the live extra)

        lingers = False
        try:
            self._room.sync(timeout)
            with self._room.cond:
                merged = watch.merged()
                if not merged:
                    lingers = True  # until the next ``late_merges``
                    self._lingering.append((watch, own))
                    for old, _ in self._lingering[: -self.LINGERING_AT_MOST]:
                        old.stop()  # a caller that never asks: keep memory bounded
                    del self._lingering[: -self.LINGERING_AT_MOST]
                    return
                # the order in which the server applied their edit and this one decides what
                # their text is: wait (briefly) for the relay of what the sync brought
                self._room.wait(lambda: watch.all_relayed(own), self.RELAY_WAIT)
                theirs = watch.theirs(own)
                if theirs.after_ours:
                    # their edit was made on this step's text (it came after the step, it did
                    # not race it): the step is done and their later edit stands
                    return
                room = self._room
                before = room.doc.get_state()
                ynb = YNotebook(room.doc)
                with room.doc.transaction(origin="planbook"):
                    ids = [str(c.get("id")) for c in room.cells]
                    for cell_id in merged:
                        if cell_id in theirs.texts and cell_id in ids:
                            ynb.set_cell(ids.index(cell_id), source=theirs.texts[cell_id])
                room.changed()
                self._put_back()
                room.send(room.doc.get_update(before), [], timeout)
        finally:
            if not lingers:
                watch.stop()
        error = ConflictError(merge_message(merged[0], theirs.unknown.get(merged[0])))
        error.landed = True  # type: ignore[attr-defined]  # the record went with the change
        raise error

    def late_merges(self, *, sync: bool, timeout: float) -> list[LateMerge]:
        """Edits made on a target's text before a commit rewrote it that reached the server
        only after the commit looked for a merge (a network's delay): each target's text as
        they made it, for the caller to put back with its record of the change, in one
        transaction. One round trip, only while a text rewrite is watched: a watch ends with
        what it finds, when someone edits the step's text itself (they saw it: nothing can
        race it any more), when this process rewrites the cell again, or LINGER_FOR seconds
        after its commit (the executor asks before each step, before code runs, and at the
        run's end). ``sync=False``: look at what the server sent so far, without asking (it
        sends each edit as it applies it: between two steps, that is as good). ``timeout``:
        for the round trip."""
        lingering, self._lingering = self._lingering, []
        if not lingering:
            return []
        found: list[LateMerge] = []
        kept: list[tuple[SourceWatch, bytes]] = []
        try:
            if sync and not self._room.sync(timeout):
                return []  # unreachable: the room's reconcile takes over from here
            with self._room.cond:
                for watch, own in lingering:
                    if watch.reloads != self._room.reloads:
                        continue  # its texts are gone with the old copy
                    merged = watch.merged()
                    if not merged:
                        if time.monotonic() - watch.started < self.LINGER_FOR:
                            kept.append((watch, own))
                        continue
                    self._room.wait(functools.partial(watch.all_relayed, own), self.RELAY_WAIT)
                    theirs = watch.theirs(own)
                    if theirs.after_ours:
                        continue  # made on the step's text: a later edit, it stands
                    found += [
                        LateMerge(cell_id, theirs.texts[cell_id], theirs.unknown.get(cell_id))
                        for cell_id in merged
                        if cell_id in theirs.texts
                    ]
        finally:
            for watch, _ in lingering:
                if all(watch is not k for k, _ in kept):
                    watch.stop()
            self._lingering[:0] = kept
        return found

    def _forget(self, ops: list[Op]) -> None:
        """A change of a watched cell's text by this process ends its watch (a merge found
        later could not be told from this change)."""
        rewritten = {op.cell_id for op in ops if op.kind in ("replace", "delete", "move")}
        for entry in list(self._lingering):
            if rewritten & entry[0].targets.keys():
                entry[0].stop()
                self._lingering.remove(entry)

    def stop(self) -> None:
        """End every watch (the document closes)."""
        for watch, _ in self._lingering:
            watch.stop()
        self._lingering.clear()
