"""Which parts of the plans changed since a save, told by the parts themselves.

A notebook keeps every plan it ran, and a save wrote each plan's dump again if a look at its
fields and lists did not show it unchanged: about 3 µs a plan, so beside 1,000 past plans a
staged step cost 12 ms of CPU where beside one it cost 0.7. Here a plan, a revision and the
lists they hold (``TrackedList``) note each change in one journal, as ``Step`` notes its
assignments (model/plan.py): a save asks which objects changed since the last one and dumps
the plans that hold them, whatever the number of the others (engine/plan_dumps.py).
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections import deque
from collections.abc import Iterable, Sequence
from itertools import islice, repeat
from typing import Any, Generic, SupportsIndex, TypeVar

_T = TypeVar("_T")

#: How many of the latest changes the journal keeps: a save that finds more since the last one
#: dumps every plan again (their parts' dumps are reused where equal, so it stays correct).
KEPT = 1024


class Journal(Generic[_T]):
    """How many changes some objects have had, all together, and which objects changed last
    (one entry per change, the last ``KEPT``): the steps' assignments (``ASSIGNMENTS`` in
    model/plan.py), the changes of plans' holders (``HOLDERS``).

    The journal is the process's, and it holds its objects weakly: held strongly, its last
    1,024 entries kept every record they were part of alive after its session closed (a
    notebook's list of plans holds them all), and a process that opened a notebook with
    1,000 past plans again and again kept 29,000 more objects each time, until 1,024 changes
    later. A reader compares what it is told with objects it holds itself, by identity, so an
    object gone is one no reader holds: it is left out of ``since``."""

    def __init__(self) -> None:
        self.count = 0
        self._recent: deque[weakref.ref[_T]] = deque(maxlen=KEPT)
        # ``count`` and ``_recent`` change together: a reader takes the last k entries as the
        # changes since k ago, which holds only when no thread (another notebook's session, a
        # preview) is between the two updates; and ``+=`` alone can lose a count between threads
        self._lock = threading.Lock()

    def note(self, changed: _T) -> int:
        """Note a change of ``changed``; its number (the count it brought), which no other
        change has."""
        held = weakref.ref(changed)  # CPython makes one per object, then hands out that one
        with self._lock:
            self.count += 1
            self._recent.append(held)
            return self.count

    def since(self, then: int) -> tuple[int, list[_T] | None]:
        """The count now, and the objects changed since it was ``then`` (an object may be
        named more than once), or None when they are no longer all kept."""
        with self._lock:
            now = self.count
            if now == then:
                return now, []
            if not 0 < now - then <= len(self._recent):
                return now, None
            # from the right end: islice from the left walked the whole deque (1,024 entries)
            # at every save to reach the last few
            held = islice(reversed(self._recent), now - then)
            return now, [found for ref in held if (found := ref()) is not None]


#: The one journal of the plans' holders (a plan, a revision, a tracked list).
HOLDERS: Journal[object] = Journal()


def holds_itself(items: Iterable[object], one: object) -> bool:
    """Whether ``items`` holds ``one`` itself, not an equal object (found in C): a journal
    names the very objects that changed, and two plans or lists may be equal."""
    return any(map(operator.is_, items, repeat(one)))


class TrackedList(list[_T]):
    """A list that notes each change in place in ``HOLDERS``: a plan's revisions, approvals
    and results, and a revision's steps. Reading costs what a list's does. It also marks its
    *rewrites*, the changes anywhere but at its end (all but an append, an extend and
    ``+=``), so a reader that saw its first items knows they are still there without a look
    at each (``Prefix``)."""

    # weakly referable: the journal (``HOLDERS``) must not keep a list, and all it holds, alive
    __slots__ = ("__weakref__", "_rewrites")

    def _rewrote(self) -> None:
        # the journal's number for this change, not the last mark plus one: two threads
        # rewriting at once each store a number of their own, so a late store never brings
        # back the mark a reader saw (a count read, then stored, could)
        self._rewrites = HOLDERS.note(self)

    def append(self, item: _T) -> None:
        super().append(item)
        HOLDERS.note(self)

    def extend(self, items: Iterable[_T]) -> None:
        super().extend(items)
        HOLDERS.note(self)

    def insert(self, index: SupportsIndex, item: _T) -> None:
        super().insert(index, item)
        self._rewrote()

    def pop(self, index: SupportsIndex = -1) -> _T:
        item = super().pop(index)
        self._rewrote()
        return item

    def remove(self, item: _T) -> None:
        super().remove(item)
        self._rewrote()

    def clear(self) -> None:
        super().clear()
        self._rewrote()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        super().sort(*args, **kwargs)
        self._rewrote()

    def reverse(self) -> None:
        super().reverse()
        self._rewrote()

    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, value)
        self._rewrote()

    def __delitem__(self, index: Any) -> None:
        super().__delitem__(index)
        self._rewrote()

    def __iadd__(self, items: Iterable[_T]) -> TrackedList[_T]:  # type: ignore[override,misc]
        super().__iadd__(items)
        HOLDERS.note(self)
        return self

    def __imul__(self, times: SupportsIndex) -> TrackedList[_T]:
        super().__imul__(times)
        self._rewrote()
        return self


def rewrites(items: TrackedList[Any]) -> int:
    """The mark of ``items``'s last change anywhere but at its end (the journal's number for
    it; 0: none). A list made by copying one, ``copy.copy``, starts with that one's mark: it
    is another list all the same."""
    return getattr(items, "_rewrites", 0)


class Prefix(Generic[_T]):
    """What a reader saw of a list: its items, found again at its start later.

    Staging step 500 compared the plan's 500 steps, one by one, with the ones seen at step
    499, in four places (the projection, the open steps, the plan's dumps, the serializer):
    in C, but 2,000 calls a staged step, most of what its instructions grew by from step 10.
    A ``TrackedList`` says it in O(1): the very list, not rewritten since, at least as long.
    Any other list is compared item by item with a copy, as before."""

    __slots__ = ("_copy", "_length", "_rewrites", "_tracked")

    def __init__(self, items: Sequence[_T]) -> None:
        self._length = len(items)
        self._tracked = items if isinstance(items, TrackedList) else None
        self._rewrites = rewrites(self._tracked) if self._tracked is not None else 0
        self._copy = list(items) if self._tracked is None else None

    def __len__(self) -> int:
        return self._length

    def starts(self, items: Sequence[_T]) -> bool:
        """Whether ``items`` starts with the very items seen (the same objects, in order)."""
        if len(items) < self._length:
            return False
        if self._tracked is not None:
            return items is self._tracked and rewrites(self._tracked) == self._rewrites
        copy = self._copy
        return copy is not None and all(map(operator.is_, islice(items, self._length), copy))


def tracked(items: list[_T]) -> TrackedList[_T]:
    """``items`` as a ``TrackedList`` (the very list when it is one): a model's validator
    gives its lists to this, so an assigned or loaded list is tracked."""
    return items if type(items) is TrackedList else TrackedList(items)
