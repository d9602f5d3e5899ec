"""One holder at a time for a notebook file, across threads and processes.

The OS lock (``fcntl.flock``) is taken on the notebook's folder itself, opened read-only. Not on
the notebook: every save replaces it with a new file (atomic rename), and a lock on the old
inode would protect nothing. Not on a lock file beside it either, as earlier versions did: a
cleanup that deletes the file while one process holds it (``git clean -X``, ``rm .*-lock``) let
a second process create a new one and hold it at the same time. A folder that holds the notebook
cannot be deleted from under it, so mutual exclusion survives any cleanup, and nothing is ever
written beside the notebook. The price: transactions on notebooks of one folder take turns
across processes. They are short (no step's code runs under the lock) and a folder rarely has
many notebooks changed at the same moment.

Within one process the lock is reentrant for a thread and shared by every notebook of the same
folder (a kernel may hold two sessions on one notebook, or a transaction on one notebook may
read another), and a thread waits for another thread's hold.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from pathlib import Path

from planbook.errors import MetadataError

#: How long a transaction waits for another process before it gives up with a message. Holders
#: never run code under the lock (a step's code runs after "running" is saved), so a wait this
#: long means the other process is stuck.
WAIT_SECONDS = 60.0
_POLL = 0.005


class _FolderLock:
    """The process's one hold on a folder: a thread-reentrant mutex over one ``flock``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.mutex = threading.RLock()
        self.depth = 0
        self._fd: int | None = None

    def acquire(self, wait: float, name: str) -> None:
        deadline = time.monotonic() + wait
        if not self.mutex.acquire(timeout=max(wait, 0.0)):
            raise _timeout(name)
        try:
            if self.depth == 0:
                self._fd = self._lock(deadline, name)
            self.depth += 1
        except BaseException:
            self.mutex.release()
            raise

    def release(self) -> None:
        try:
            self.depth -= 1
            if self.depth == 0 and self._fd is not None:
                fd, self._fd = self._fd, None
                os.close(fd)  # closing the only descriptor releases the flock
        finally:
            self.mutex.release()

    def _lock(self, deadline: float, name: str) -> int:
        fd = _open_folder(self.folder, name)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return fd
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise _timeout(name) from None
                    time.sleep(_POLL)
                except OSError as exc:  # a file system without flock on folders
                    raise MetadataError(
                        f"cannot lock the folder of {name} ({os.strerror(exc.errno or 0)}); "
                        "planbook needs a local file system that supports flock"
                    ) from None
        except BaseException:
            os.close(fd)
            raise


def _open_folder(folder: Path, name: str) -> int:
    try:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            why = "it no longer exists"
        elif exc.errno in (errno.EACCES, errno.EPERM):
            why = "it cannot be read: planbook needs to read that folder"
        else:
            why = os.strerror(exc.errno or 0)
        raise MetadataError(f"cannot lock {name}: its folder {folder} ({why})") from None


def _timeout(name: str) -> MetadataError:
    return MetadataError(
        f"another process has held {name} (or a notebook in its folder) for over "
        f"{WAIT_SECONDS:g} s; check for a stuck planbook or kernel, then try again"
    )


class NotebookLock:
    """Reentrant across threads of this process, exclusive across processes."""

    def __init__(self, notebook: Path, folder: _FolderLock) -> None:
        self.notebook = notebook
        self._folder = folder
        self._depth = 0

    @property
    def held(self) -> bool:
        """Whether some thread of this process holds it now."""
        return self._depth > 0

    def hold(self, wait: float | None = None) -> _Hold:
        """Held for a ``with`` block (``wait``: how long to wait for another process)."""
        return _Hold(self, wait)

    def acquire(self, wait: float | None = None) -> None:
        """One more hold by this thread, until ``release``: for a hold that outlives the block
        that took it (a save kept in memory holds the notebook until it is written)."""
        self._folder.acquire(WAIT_SECONDS if wait is None else wait, self.notebook.name)
        self._depth += 1  # only ever changed under the folder's mutex

    def release(self) -> None:
        self._depth -= 1
        self._folder.release()


class _Hold:
    """A ``with`` block's hold on a ``NotebookLock``. A class, not a generator: a step takes
    the lock about ten times, and ``contextmanager``'s generator cost more than the hold."""

    __slots__ = ("_lock", "_wait")

    def __init__(self, lock: NotebookLock, wait: float | None) -> None:
        self._lock = lock
        self._wait = wait

    def __enter__(self) -> None:
        self._lock.acquire(self._wait)

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


_folders: dict[Path, _FolderLock] = {}
_registry: dict[Path, NotebookLock] = {}
_registry_mutex = threading.Lock()


def notebook_lock(notebook: Path) -> NotebookLock:
    """The one lock object of this process for ``notebook`` (a resolved path)."""
    with _registry_mutex:
        lock = _registry.get(notebook)
        if lock is None:
            folder = notebook.parent
            shared = _folders.get(folder)
            if shared is None:
                shared = _folders[folder] = _FolderLock(folder)
            lock = _registry[notebook] = NotebookLock(notebook, shared)
        return lock
