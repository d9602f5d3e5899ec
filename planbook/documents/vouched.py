"""Containers that say how they were made from another one.

The serializer keeps the text of what it encoded last, and finds what changed by comparing
the new containers with those, item by item (in C): a plan's 500 steps, a notebook's 1,000
plans, at every save. A container made from another by code that knows what it did says so
instead, and the serializer takes its word: a list grown at its end (a revision's steps:
engine/plan_dumps.py) and an object with some of its entries replaced (the record's plans:
``apply_metadata_changes`` in documents/base.py). A copy of one is a plain container: it
vouches for nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

#: Objects at least this long are copied as ``Replaced`` (the serializer's long objects,
#: ``_BLOCKED_DICT_MIN``): a shorter one costs less to compare than to vouch for.
REPLACED_MIN = 64


class Appended(list[Any]):
    """A list made of another one's items and more after them, said so by whoever made it
    (a revision's steps, a plan's results: engine/plan_dumps.py). The encoder takes the text
    of that one and encodes the new items alone, with no look at the items the two share
    (staging step 500 compared 500 steps with the last save's, one by one). ``base`` is that
    list; its maker lets go of it once it made the next one, so a chain of grown lists does
    not hold every list before it."""

    __slots__ = ("base",)

    def __init__(self, base: list[Any], new: Iterable[Any]) -> None:
        super().__init__(base)
        self.extend(new)
        self.base: list[Any] | None = base

    def __reduce__(self) -> tuple[type[list[Any]], tuple[list[Any]]]:
        # a copy (or a pickle) is a plain list: it vouches for nothing
        return list, (list(self),)


class Replaced(dict[str, Any]):
    """An object copied from ``base``, then with the entries named in ``replaced`` set to
    other values: the same keys, in the same order. ``base`` is None once an entry was added
    or removed (the order changed: it vouches for nothing)."""

    __slots__ = ("base", "replaced")

    base: dict[str, Any] | None
    replaced: set[str]

    @classmethod
    def copy_of(cls, base: dict[str, Any]) -> Replaced:
        """A copy of ``base``, vouching for what is set in it from now on. A ``base`` that
        is itself one lets go of the object it was copied from: copies of copies do not
        hold every object before them (the plans' object is copied at every save)."""
        if type(base) is Replaced:
            base.base = None
        made = cls(base)
        made.base, made.replaced = base, set()
        return made

    def put(self, key: str, value: Any) -> None:
        """``self[key] = value``, noted."""
        if key in self:
            self.replaced.add(key)
        else:
            self.base = None
        self[key] = value

    def drop(self, key: str) -> None:
        """``self.pop(key, None)``, noted."""
        if self.pop(key, _ABSENT) is not _ABSENT:
            self.base = None

    def __reduce__(self) -> tuple[type[dict[str, Any]], tuple[dict[str, Any]]]:
        # a copy (or a pickle) is a plain object: it vouches for nothing
        return dict, (dict(self),)


_ABSENT = object()
