"""Whether a file changed since planbook last read or wrote it, told by one ``stat`` instead of
reading the whole file.

A file's status change time (``st_ctime``) moves with every write, truncate, rename onto it and
``utime``, and no program can set it: a copy that keeps size and modification time (``cp -p``,
``rsync -t``) still moves it. So the device, inode, size, modification and change times taken
after planbook's own save name that save's bytes, until someone changes the file, with one
exception: the clock the kernel stamps files with is coarse (4 ms here), and a change made in
the same tick as the stat can carry the same times. Such a look is *racy* (git's word for its
index); the next look reads the bytes to be sure, as git compares a racily clean file's content.

A look is exact when the coarse clock had already moved past the file's change time when it was
taken (any later change is stamped later), or when the file system stamps a change fine-grained
once its times were read (Linux 6.13 and later, ext4, xfs, btrfs, tmpfs: "multigrain
timestamps"), which ``probe_fine_grained`` finds out on a file planbook is writing anyway.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

#: The coarse real-time clock file times are stamped from (CLOCK_REALTIME_COARSE on Linux;
#: Python names no constant for it). Elsewhere the fine clock: every look is then racy unless
#: the file system is found fine-grained, which costs a read, never a missed change.
_COARSE = 5 if hasattr(time, "CLOCK_REALTIME") and os.uname().sysname == "Linux" else None
#: Devices found to stamp a change fine-grained after its times were read.
_fine_grained: dict[int, bool] = {}


def coarse_now() -> int:
    if _COARSE is not None:
        try:
            return time.clock_gettime_ns(_COARSE)
        except OSError:
            pass
    return time.time_ns()


@dataclass(frozen=True)
class Look:
    """One look at a file: who it is and when it last changed."""

    key: tuple[int, int, int, int, int]
    #: A change after this look is certain to change ``key`` (see the module docstring).
    exact: bool

    def unchanged_since(self, earlier: Look | None) -> bool:
        """Nothing changed the file between ``earlier`` and this look, as far as stat can
        tell for certain (False: read it to know)."""
        return earlier is not None and earlier.exact and earlier.key == self.key


def look(st: os.stat_result) -> Look:
    """``st`` (just taken) as a Look; the clock is read after it, as the rule needs."""
    now = coarse_now()
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return Look(key, _fine_grained.get(st.st_dev, False) or now > st.st_ctime_ns)


def probe_fine_grained(fd: int, mode: int) -> None:
    """On a file being written (``fd``, whose mode becomes ``mode``): two status changes with a
    read of the times between, inside one tick of the coarse clock. A coarse file system gives
    both the same change time; one that stamps fine-grained after a read gives the second a
    later one. A tick boundary in between proves nothing: tried again at the next save."""
    if os.fstat(fd).st_dev in _fine_grained:
        os.fchmod(fd, mode)
        return
    before = coarse_now()
    os.fchmod(fd, mode)
    first = os.fstat(fd)
    os.fchmod(fd, mode)
    second = os.fstat(fd)
    if coarse_now() == before:
        _fine_grained[first.st_dev] = second.st_ctime_ns != first.st_ctime_ns
