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
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from planbook.documents import deep_json
from planbook.documents.file_stat import Look, look, probe_fine_grained
from planbook.documents.lock import notebook_lock
from planbook.documents.nbnode import NodeNotebook, assign_ids, check_cell_types, normalize
from planbook.documents.serializer import (
    JUPYTER,
    Chunk,
    Encoder,
    detect,
    detect_bytes,
    guess_style,
    same_bytes,
)
from planbook.documents.trust import KeptTrust
from planbook.errors import MetadataError, TransactionFailed, UsageMistake

#: The text a file was read from (or its bytes) and its tree as parsed.
_Unsettled = tuple[str | bytes, dict[str, Any]] | None


class _EncodedPieces(dict[str, Chunk]):
    """Pieces of the file's text and their UTF-8 bytes; a piece seen for the first time is
    encoded (a string's hash is kept in it, so an unchanged piece is found at once). Pieces
    the file no longer holds stay until the bytes encoded since (``added``) outgrow the file
    as it was made (``kept``): a new one for every save, of every piece, cost a staged step
    40 µs beside 1,000 past plans (a thousand pieces), and this holds at most a file's size
    more."""

    added = 0
    kept = 0

    @classmethod
    def of(cls, pieces: list[str], chunks: list[Chunk]) -> _EncodedPieces:
        made = cls(zip(pieces, chunks, strict=True))
        made.kept = sum(map(len, chunks))
        return made

    @property
    def outgrown(self) -> bool:
        return self.added > self.kept

    def __missing__(self, piece: str) -> Chunk:
        data = self[piece] = piece.encode("utf-8")
        self.added += len(data)
        return data


class FileNotebook(NodeNotebook):
    backend = "file"

    def __init__(self, path: str | os.PathLike[str], *, description: str | None = None) -> None:
        self.path = Path(path).resolve()
        self._lock = notebook_lock(self.path)
        seen = self._look()
        data = self._read_bytes()
        nb, self._encoder, self._unsettled = self._parse(data)
        #: The file as planbook last read or wrote it, by stat.
        self._seen: Look | None = seen
        #: The file's bytes as read, until planbook first writes it (a save that would write
        #: them again writes nothing).
        self._read: bytes | None = data
        #: The pieces of text planbook last wrote and their bytes (None: unknown since).
        self._written: list[str] | None = None
        self._chunks: list[Chunk] = []
        #: piece -> its UTF-8 bytes: a piece written before is not encoded again.
        self._encoded_pieces = _EncodedPieces()
        #: How deep ``coalesced`` blocks are; whether a save is kept in memory (and held).
        self._coalescing = 0
        self._pending = False
        #: Kept saves dropped unwritten (their write failed, or someone else's save won):
        #: whoever held news of what they carried can tell it was lost (``saves_dropped``).
        self.saves_dropped = 0
        #: Jupyter's trust of the file, kept across planbook's saves (documents/trust.py);
        #: whether the file planbook first replaced was trusted (None: not asked yet).
        self._trust = KeptTrust()
        self._trusted: bool | None = None
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

    def _parse(self, data: bytes) -> tuple[dict[str, Any], Encoder, _Unsettled]:
        """The tree, an encoder in the style the file looks written in, and what
        ``_settle_style`` needs to confirm that style (None: nothing to confirm)."""
        name = self.path.name
        try:
            text = data.decode("utf-8")
            nb = deep_json.loads(text)  # parts nested too deep kept as their text
        except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError alike
            raise MetadataError(
                f"{name} is not a readable notebook ({type(exc).__name__}: {exc}); "
                "fix the file or pass another one"
            ) from None
        if not isinstance(nb, dict):
            raise MetadataError(f"{name} is not a readable notebook (not a JSON object)")
        unsettled: _Unsettled = (data, dict(nb))  # decoded again only when needed
        if nb.get("nbformat") != 4:
            nb, text = _converted(text, name)
            unsettled = (text, dict(nb))
        check_cell_types(nb, name)
        guess = guess_style(text, nb)
        if guess is None:
            # Not in one consistent style: the first save writes it as Jupyter would.
            nb, encoder, unsettled = normalize(nb), Encoder(JUPYTER), None
        else:
            encoder = Encoder(guess)
        assign_ids(nb)
        return nb, encoder, unsettled

    def _settle_style(self) -> None:
        """Before the first save: the style that writes the file as it was read, byte for byte
        (``detect``, which encodes it whole and so fills the encoder's cache), or Jupyter's
        when none does. Done here, not when the file is opened: opening costs a parse only."""
        if self._unsettled is None:
            return
        text, original = self._unsettled
        self._unsettled = None
        if isinstance(text, bytes):
            found_bytes = detect_bytes(text, original)
            if found_bytes is not None:
                self._encoder, pieces, chunks = found_bytes
                # the unchanged pieces of the first save are not encoded again, and the file
                # is known as these pieces: its bytes as read need not be kept
                self._encoded_pieces = _EncodedPieces.of(pieces, chunks)
                self._written, self._chunks, self._read = pieces, chunks, None
            found = None if found_bytes is None else found_bytes[0]
        else:
            detected = detect(text, original)
            found = None if detected is None else detected[1]
        if found is None:
            self._nb, self._encoder = normalize(self._nb), Encoder(JUPYTER)
        else:
            self._encoder = found
        self.style = self._encoder.style

    def locked(self) -> AbstractContextManager[object]:
        """Exclusive across processes (an OS lock beside the file, see documents/lock.py) and
        threads; reentrant. Every read compares the file's bytes, so the first read under the
        lock sees what another process saved just before."""
        return self._lock.hold()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Read, change and save under the lock, so no other process saves in between. The
        style is settled before the first change (not inside it: a change that fails then
        goes back to a tree in the settled style)."""
        with self.locked():
            if self._depth == 0:
                self._settle_style()
            with super().transaction():
                yield

    def _load(self) -> None:
        seen = self._look()  # before the read: a change after it is seen next time
        if seen is not None and seen.unchanged_since(self._seen):
            return
        data = self._read_bytes()
        if (self._written is not None and same_bytes(data, self._chunks)) or data == self._read:
            self._seen = seen  # exact now, unless read in the tick of the last change
            return
        if self._pending:  # someone else's save wins over the one kept in memory
            self.saves_dropped += 1
            self._drop_pending()
        self._nb, self._encoder, self._unsettled = self._parse(data)
        self.style = self._encoder.style
        self._written, self._chunks, self._encoded_pieces = None, [], _EncodedPieces()
        self._read, self._seen = data, seen
        self._trusted = None  # the file someone else wrote: its trust is asked again

    @contextmanager
    def coalesced(self) -> Iterator[None]:
        """Saves inside are kept in memory, the notebook held, until ``write_pending`` or the
        end of the block writes them as one (see the module docstring)."""
        if not self._coalescing:
            self._check_writable()
        self._coalescing += 1
        try:
            yield
        finally:
            self._coalescing -= 1
            if self._coalescing == 0:
                self.write_pending()

    def _check_writable(self) -> None:
        """Refuse at once when the notebook's folder cannot take a save: the saves kept in
        memory reach the disk only later, after steps were counted done."""
        folder = self.path.parent
        if os.access(folder, os.W_OK):
            return
        try:  # the OS's own refusal, for its reason and the path it names
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{self.path.name}.", suffix=".tmp")
        except OSError as exc:
            raise TransactionFailed(
                f"nothing was changed: {self.path.name} cannot be saved ({exc.strerror})"
            ) from exc
        os.close(fd)
        os.unlink(tmp)

    @property
    def save_kept(self) -> bool:
        """A save is kept in memory, not written yet (see ``coalesced``)."""
        return self._pending

    @property
    def keeps_saves(self) -> bool:
        """Inside ``coalesced``: a transaction's save is kept in memory until written."""
        return self._coalescing > 0

    def write_pending(self) -> None:
        """Write the save kept in memory, if any, and let go of the hold it kept."""
        if not self._pending:
            return
        try:
            self._write()
        except BaseException:
            # memory goes back to the file: nothing kept there is taken as saved
            self.saves_dropped += 1
            self._drop_pending()
            self._seen, self._written = None, None
            with contextlib.suppress(Exception):
                self._load()
            raise
        self._drop_pending()

    def _drop_pending(self) -> None:
        if self._pending:
            self._pending = False
            self._lock.release()

    def _commit(self) -> None:
        self._settle_style()
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

    def _write(self) -> None:
        """The file's text goes to disk as the encoder's pieces, never joined: a long piece
        (a cell, an output) keeps its bytes from the save that first wrote it, so a save
        copies the file's bytes once, into the file (joining and encoding the whole text
        made a save cost three times the write)."""
        # Loops over the pieces run in C (map, zip, list ==): a plan's history is thousands
        # of pieces, and a Python loop over them made a save grow with it.
        try:
            pieces = self._encoder.pieces(self._nb)
            if pieces == self._written:  # unchanged pieces are the same objects: a quick look
                return
            chunks = list(map(self._encoded_pieces.__getitem__, pieces))
        except UnicodeEncodeError as exc:
            raise _unencodable(exc) from None
        if not (self._read is not None and same_bytes(self._read, chunks)):
            if self._trusted is None:  # asked once per file read, not per save
                # the pieces, not joined: only a notary (where one exists) reads them whole
                self._trusted = self._trust.was_trusted(
                    self._read if self._read is not None else self._chunks
                )
            self._seen = atomic_write(self.path, chunks)
            if self._trusted:  # the person trusted it: planbook's save keeps it so
                self._trust.signed(self._nb, chunks)
        self._written, self._chunks = pieces, chunks
        if self._encoded_pieces.outgrown:  # only what the file holds now
            self._encoded_pieces = _EncodedPieces.of(pieces, chunks)
        self._read = None


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


def _write_all(fd: int, chunks: list[Chunk]) -> None:
    """All of ``chunks`` to ``fd``, gathered by the kernel (writev), in order."""
    batch = 512  # under IOV_MAX (1024 on Linux)
    for start in range(0, len(chunks), batch):
        group = chunks[start : start + batch]
        written = os.writev(fd, group)
        if written != sum(map(len, group)):  # a short write (a signal, a full disk): the rest
            rest = memoryview(b"".join(group))[written:]
            while rest:
                rest = rest[os.write(fd, rest) :]


def atomic_write(path: Path, data: bytes | list[Chunk]) -> Look:
    """Write ``data`` (or its pieces, in order) to a temporary file beside ``path``, make it
    durable, then rename it over; the look at the file taken right after (``file_stat``),
    through the written file itself."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb", buffering=0) as handle:
            _write_all(handle.fileno(), [data] if isinstance(data, bytes) else data)
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
