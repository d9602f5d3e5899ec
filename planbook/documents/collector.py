"""The cyclic garbage collector held off: while a plan's views and text are built, and while a
collaboration room's shared document is read or changed.

Showing a 10,000-step plan makes tens of thousands of small objects (a view, a list, the
strings of its diff) that are freed by reference counting and never form a cycle. Each 700
of them started a young-generation pass, and now and then a pass over every object the
process holds (the slowest renders took 300 ms against 170). ``timeit`` holds the collector
off the same way while it measures.

A live room's document (pycrdt) is read and changed holding a transaction: a commit of our
own, a read of its cells or metadata, an update the server sent. A collector pass in that
window frees whatever cycles it finds, and the release of a pycrdt object among them may need
the store that transaction holds: pycrdt then panics (``ExclusiveAcqFailed``, logged as an
unraisable exception; seen in every run of the racing test in tests/live/test_live_faults.py,
always inside a young pass), and once its timing moved, the process crashed (a segmentation
fault in pycrdt's commit). Holding the collector off for those windows moves such releases
outside them.

Holds may nest and come from several threads: the collector is enabled again when the last
one ends, and only if it was enabled before the first (a program that turned it off keeps it
off).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


class _Holds:
    """How many holds are open, and whether the collector ran before the first."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.open = 0
        self.was_enabled = False


_HOLDS = _Holds()


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside the ``with`` block (reference counting frees as always);
    the collector runs again after it, whether the block returned or raised."""
    with _HOLDS.lock:
        if _HOLDS.open == 0:
            _HOLDS.was_enabled = gc.isenabled()
            gc.disable()
        _HOLDS.open += 1
    try:
        yield
    finally:
        with _HOLDS.lock:
            _HOLDS.open -= 1
            if _HOLDS.open == 0 and _HOLDS.was_enabled:
                gc.enable()
