"""A notebook file on disk, saved atomically after each transaction that changed something.

Reading never writes: an older notebook gets its cell ids in memory and on disk only with the
first change. A save writes what Jupyter's own save would (or the file's own consistent style,
see ``serializer``), re-encoding only what changed. Whether someone else changed the file is
decided by one ``stat`` against the one taken when planbook last read or wrote it, and by its
bytes when that look was racy (``file_stat``): a copy that keeps size and modification time
(``cp -p``, ``rsync -t``) is still seen, and an unchanged file is not read again.

Inside ``coalesced()`` (an approval and the run it starts), a transaction's save is kept in
memory and the notebook stays held by this thread until ``write_pending`` or the block's end
writes it: the approval travels with the first step's save, the last step's with the run's end.
A kept save never outlives the hold, so no other process ever reads a file that lags it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from planbook.documents.file_stat import Look, look, probe_fine_grained
from planbook.documents.lock import notebook_lock
from planbook.documents.nbnode import NodeNotebook, assign_ids, check_cell_types, normalize
from planbook.documents.serializer import JUPYTER, Encoder, detect
from planbook.errors import MetadataError, UsageMistake


class FileNotebook(NodeNotebook):
    backend = "file"

    def __init__(self, path: str | os.PathLike[str], *, description: str | None = None) -> None:
        self.path = Path(path).resolve()
        self._lock = notebook_lock(self.path)
        seen = self._look()
        data = self._read_bytes()
        nb, self._encoder = self._parse(data)
        self._bytes = data
        #: The file as planbook last read or wrote it (``_bytes``), by stat.
        self._seen: Look | None = seen
        #: How deep ``coalesced`` blocks are; whether a save is kept in memory (and held).
        self._coalescing = 0
        self._pending = False
        super().__init__(nb, self._encoder.style)
        self.description = description or f"file: {self.path.name} (saved by planbook on disk)"

    def _look(self) -> Look | None:
        try:
            return look(os.stat(self.path))
        except OSError:
            return None  # the read that follows says what is wrong

    def _read_bytes(self) -> bytes:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            raise MetadataError(
                f"notebook {str(self.path)!r} does not exist or was removed; check the path"
            ) from None
        except OSError as exc:
            raise MetadataError(
                f"{self.path.name} cannot be read ({exc.strerror}); fix its permissions or path"
            ) from None

    def _parse(self, data: bytes) -> tuple[dict[str, Any], Encoder]:
        name = self.path.name
        try:
            text = data.decode("utf-8")
            nb = json.loads(text)
        except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError alike
            raise MetadataError(
                f"{name} is not a readable notebook ({type(exc).__name__}: {exc}); "
                "fix the file or pass another one"
            ) from None
        if not isinstance(nb, dict):
            raise MetadataError(f"{name} is not a readable notebook (not a JSON object)")
        if nb.get("nbformat") != 4:
            nb, text = _converted(text, name)
        check_cell_types(nb, name)
        found = detect(text, nb)
        if found is None:
            # Not in one consistent style: the first save writes it as Jupyter would.
            nb, encoder = normalize(nb), Encoder(JUPYTER)
        else:
            encoder = found[1]
        assign_ids(nb)
        return nb, encoder

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive across processes (an OS lock beside the file, see documents/lock.py) and
        threads; reentrant. Every read compares the file's bytes, so the first read under the
        lock sees what another process saved just before."""
        with self._lock.hold():
            yield

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Read, change and save under the lock, so no other process saves in between."""
        with self.locked(), super().transaction():
            yield

    def _load(self) -> None:
        seen = self._look()  # before the read: a change after it is seen next time
        if seen is not None and seen.unchanged_since(self._seen):
            return
        data = self._read_bytes()
        if data == self._bytes:
            self._seen = seen  # exact now, unless read in the tick of the last change
            return
        self._drop_pending()  # someone else's save wins over the one kept in memory
        self._nb, self._encoder = self._parse(data)
        self.style = self._encoder.style
        self._bytes = data
        self._seen = seen

    @contextmanager
    def coalesced(self) -> Iterator[None]:
        """Saves inside are kept in memory, the notebook held, until ``write_pending`` or the
        end of the block writes them as one (see the module docstring)."""
        self._coalescing += 1
        try:
            yield
        finally:
            self._coalescing -= 1
            if self._coalescing == 0:
                self.write_pending()

    def write_pending(self) -> None:
        """Write the save kept in memory, if any, and let go of the hold it kept."""
        if not self._pending:
            return
        try:
            self._write()
        except BaseException:
            # memory goes back to the file: nothing kept there is taken as saved
            self._drop_pending()
            self._seen, self._bytes = None, b""
            with contextlib.suppress(Exception):
                self._load()
            raise
        self._drop_pending()

    def _drop_pending(self) -> None:
        if self._pending:
            self._pending = False
            self._lock.release()

    def _commit(self) -> None:
        if not self._coalescing:
            self._write()
            return
        try:  # refused now, in its transaction, if the file could not hold it
            self._encoder.prepare(self._nb)
        except UnicodeEncodeError as exc:
            raise _unencodable(exc) from None
        if not self._pending:
            self._lock.acquire()  # kept until written: no other process reads a lagging file
            self._pending = True

    def _encoded(self) -> bytes:
        try:
            return self._encoder.encode(self._nb).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _unencodable(exc) from None

    def _write(self) -> None:
        data = self._encoded()
        if data == self._bytes:
            return
        self._seen = atomic_write(self.path, data)
        self._bytes = data


def _unencodable(exc: UnicodeEncodeError) -> UsageMistake:
    bad = exc.object[exc.start : exc.end]
    return UsageMistake(
        f"refused: the text holds {bad!r}, a lone surrogate that a notebook file (UTF-8) "
        "cannot store; nothing was saved: remove it or write the character it stands for"
    )


def _converted(text: str, name: str) -> tuple[dict[str, Any], str]:
    """An nbformat 3 (or older) notebook, converted to 4 as Jupyter does when it opens one."""
    # heavy: nbformat (its JSON schema)
    import nbformat

    try:
        node = nbformat.reads(text, as_version=4)
    except Exception as exc:  # nbformat raises several unrelated types for a bad file
        raise MetadataError(
            f"{name} is not a readable notebook ({type(exc).__name__}: {exc}); "
            "fix the file or pass another one"
        ) from None
    text = nbformat.writes(node)
    return normalize(json.loads(text)), text + "\n"


def atomic_write(path: Path, data: bytes) -> Look:
    """Write to a temporary file beside ``path``, make it durable, then rename it over; the
    look at the file taken right after (``file_stat``), through the written file itself."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            try:
                mode = path.stat().st_mode & 0o7777
            except FileNotFoundError:  # a new file keeps mkstemp's 0600
                mode = os.fstat(handle.fileno()).st_mode & 0o7777
            probe_fine_grained(handle.fileno(), mode)
            os.replace(tmp, path)
            return look(os.fstat(handle.fileno()))
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
