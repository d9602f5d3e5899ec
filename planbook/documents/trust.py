"""Jupyter's notebook trust (``nbformat.sign``), kept across planbook's own saves of a file.

Jupyter records a notebook its person trusted as a signature (an HMAC of the whole notebook
with the person's secret) in the person's notary database, not in the file. Any change to the
file breaks the match, so after planbook saved outputs Jupyter would open the notebook "Not
Trusted" and hide its rich outputs. planbook re-signs the file it just saved only when the
file it replaced was trusted: a notebook the person never trusted stays untrusted, and where
no notary exists yet (no secret file) nothing is read or created.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from planbook.documents.notary import Notary

log = logging.getLogger("planbook")

#: A file's bytes, whole or in the pieces a save writes (joined only where a notary reads them).
Data = bytes | Sequence[bytes | memoryview]


def _digest(data: Data) -> str:
    digest = hashlib.sha256()
    for chunk in [data] if isinstance(data, bytes) else data:
        digest.update(chunk)
    return digest.hexdigest()


class KeptTrust:
    """Whether the file's bytes are trusted by this person, remembered per content, and the
    signature carried over to planbook's next save of a trusted file."""

    def __init__(self) -> None:
        self._known: dict[str, bool] = {}
        self._signer = TreeSigner()

    def was_trusted(self, data: Data) -> bool:
        key = _digest(data)
        if key not in self._known:
            try:
                trusted = _check(data)
            except Exception as exc:  # a save never fails for the notary: untrusted then
                # (a file that is not JSON, or nested past what a parser follows)
                log.warning("planbook: the notebook's trust could not be kept (check: %s)", exc)
                trusted = False
            self._known = {key: trusted}  # only the last file content matters
        return self._known[key]

    def signed(self, nb: dict[str, Any], new: Data) -> None:
        """The notebook just saved over a trusted file (``nb``, written as ``new``), signed as
        trusted in turn. Its signature is computed from the tree that was written where that
        is certain to equal what Jupyter computes from the file (``TreeSigner``), else from the
        file read as Jupyter reads it. Nothing is remembered of ``new``: this file's trust is
        asked again only after someone else saved it (a check per file, not per save)."""
        self._known = {}
        notary = _notary()
        if notary is None:
            return
        try:
            signature = self._signer.signature(notary, nb)
            if signature is None:
                signature = _nbformat_signature(_whole(new), notary)
            if signature is not None:
                notary.store(signature)  # what ``NotebookNotary.sign`` stores
        except Exception as exc:  # a save never fails for the notary
            log.warning("planbook: the notebook's trust could not be kept (sign: %s)", exc)


class TreeSigner:
    """Jupyter's signature of a notebook (``NotebookNotary.compute_signature``: an HMAC over
    every key and value of the notebook, keys sorted, the way ``nbformat.sign.yield_everything``
    walks it) computed from the tree planbook wrote, without reading the file back.

    Reading the file as Jupyter does (``nbformat.reads``, its schema validation) cost 93 ms a
    save on 2,000 cells, at every staged step. The tree is what the file holds (the serializer
    writes it), and it equals what ``nbformat.reads`` makes of the file up to what the walk
    cannot tell apart: a string split into lines is hashed as its lines one after another, the
    same bytes. What ``nbformat.reads`` changes besides is left out here as it leaves it out
    (``strip_transient``: the notebook's ``orig_nbformat``, ``orig_nbformat_minor`` and
    ``signature``, each cell's ``trusted``), and a notebook where it would change more (a cell
    without an id, or two with one id: it makes new random ones; not nbformat 4.5 or later)
    is signed from its file as before (``signature`` says None).

    The tree is never changed in place (a change makes new containers along its path: see
    ``documents/serializer.py``), so the walk's text of a container is kept by identity, with
    the container, until a walk no longer meets it; and the HMAC's state after the cells is
    kept with the cells' list, so a save that changed only metadata (a staged step) hashes
    only the metadata.
    """

    def __init__(self) -> None:
        #: id(container) -> (container, its walk's pieces), from the last walk of the metadata
        self._kept: dict[int, tuple[object, _Pieces]] = {}
        #: (secret, the cells' list, the HMAC after the cells) of the last signature
        self._after_cells: tuple[bytes, object, Any] | None = None

    def signature(self, notary: Any, nb: dict[str, Any]) -> str | None:
        if not _walkable_top(nb):
            return None
        secret: bytes = notary.secret
        cells = nb["cells"]
        kept = self._after_cells
        if kept is not None and kept[0] == secret and kept[1] is cells:
            digest = kept[2].copy()  # the same list holds the same cells (never changed in place)
        else:
            if not _walkable_cells(cells):
                return None
            digest = hmac.new(secret, digestmod=notary.digestmod)
            digest.update(b"cells")
            for cell in cells:  # a cell at a time: never the whole notebook's bytes at once
                digest.update(_cell_bytes(cell))
            self._after_cells = (secret, cells, digest.copy())
        walked: dict[int, tuple[object, _Pieces]] = {}
        for key in sorted(nb):
            if key == "cells":
                continue
            digest.update(key.encode())
            value = nb[key]
            if key == "metadata":
                value = {k: v for k, v in value.items() if k not in _TRANSIENT_METADATA}
            for piece in _walked(value, self._kept, walked):
                digest.update(piece)
        self._kept = walked
        return str(digest.hexdigest())


def _walked(
    value: Any, kept: dict[int, tuple[object, _Pieces]], walked: dict[int, tuple[object, _Pieces]]
) -> _Pieces:
    """The walk's bytes of ``value`` in the order and bytes of
    ``nbformat.sign.yield_everything``: short runs joined, a long string's bytes a piece of its
    own, so the containers above a checkpoint's blob share its bytes, not copy them; a
    container found in ``kept`` (the same object) is not walked again, and every container
    met is put in ``walked``."""
    if isinstance(value, dict | list | tuple):
        found = kept.get(id(value))
        if found is None or found[0] is not value:
            parts: list[bytes] = []
            if isinstance(value, dict):
                for key in sorted(value):
                    parts.append(key.encode())
                    parts.extend(_walked(value[key], kept, walked))
            else:
                for item in value:
                    parts.extend(_walked(item, kept, walked))
            found = (value, _joined_short(parts))
        walked[id(value)] = found
        return found[1]
    return (_scalar_bytes(value),)


#: The walk's bytes of a value, in pieces (see ``_walked``).
_Pieces = tuple[bytes, ...]
#: A string's bytes this long or longer stay a piece of their own.
_LONG = 4096


def _joined_short(parts: list[bytes]) -> _Pieces:
    out: list[bytes] = []
    run: list[bytes] = []
    for part in parts:
        if len(part) >= _LONG:
            if run:
                out.append(b"".join(run))
                run = []
            out.append(part)
        else:
            run.append(part)
    if run:
        out.append(b"".join(run))
    return tuple(out)


#: What ``nbformat.reads`` drops from a notebook's metadata before Jupyter signs or checks it.
_TRANSIENT_METADATA = frozenset({"orig_nbformat", "orig_nbformat_minor", "signature"})


def _walkable_top(nb: dict[str, Any]) -> bool:
    """nbformat 4.5 or later, with a metadata object and a list of cells."""
    minor = nb.get("nbformat_minor")
    return (
        nb.get("nbformat") == 4
        and isinstance(minor, int)
        and minor >= 5
        and isinstance(nb.get("metadata"), dict)
        and isinstance(nb.get("cells"), list)
    )


def _walkable_cells(cells: list[Any]) -> bool:
    """Every cell a dict with metadata and an id of its own: ``nbformat.reads`` would give a
    cell without one, or a second cell with one, a new random id."""
    ids = set()
    for cell in cells:
        if not isinstance(cell, dict) or not isinstance(cell.get("id"), str):
            return False
        if not isinstance(cell.get("metadata", {}), dict):
            return False
        ids.add(cell["id"])
    return len(ids) == len(cells)


def _cell_bytes(cell: dict[str, Any]) -> bytes:
    """A cell's walk, its ``trusted`` left out as ``nbformat.reads`` leaves it out."""
    metadata = cell.get("metadata")
    if isinstance(metadata, dict) and "trusted" in metadata:
        cell = {**cell, "metadata": {k: v for k, v in metadata.items() if k != "trusted"}}
    return b"".join(_walked(cell, {}, {}))  # a cell's containers are not kept: nothing to reuse


def _scalar_bytes(value: Any) -> bytes:
    return (value if isinstance(value, str) else str(value)).encode("utf8")


_notaries: dict[str, Notary] = {}


def _notary() -> Notary | None:
    """This person's notary, or None where none was ever set up (then nothing is trusted);
    one per data folder for the process (it keeps its database open)."""
    try:
        # heavy: jupyter_core
        from planbook.documents.jupyter_data import data_dir

        folder = data_dir()
        notary = _notaries.get(folder)
        if notary is None:
            notary = Notary.of(Path(folder))
            if notary is None:  # asked again next time: Jupyter may make one meanwhile
                return None
            _notaries[folder] = notary
        return notary
    except Exception as exc:  # an unreadable data dir must never stop a save
        log.debug("planbook: no notebook notary (%s)", exc)
        return None


def _check(data: Data) -> bool:
    notary = _notary()
    if notary is None:
        return False
    signature = _file_signature(data, notary)
    return signature is not None and notary.check(signature)


def _file_signature(data: Data, notary: Notary) -> str | None:
    """Jupyter's signature of the notebook in ``data`` as Jupyter computes it when it opens
    the file: from its JSON tree where that is certain to be what Jupyter reads
    (``TreeSigner``), else from the file read by nbformat; None for a notebook Jupyter trusts
    none of."""
    whole = _whole(data)
    tree = json.loads(whole)
    signature = TreeSigner().signature(notary, tree) if isinstance(tree, dict) else None
    return signature if signature is not None else _nbformat_signature(whole, notary)


def _whole(data: Data) -> bytes:
    return data if isinstance(data, bytes) else b"".join(data)


def _nbformat_signature(whole: bytes, notary: Notary) -> str | None:
    """The signature nbformat's notary computes of the notebook in ``whole``, read as Jupyter
    reads it (converted, ids given): for the notebooks ``TreeSigner`` does not walk. None for
    a format before 3, which Jupyter never trusts (``NotebookNotary.check_signature``)."""
    # heavy: nbformat (jsonschema), for the notebooks Jupyter reads differently only
    import nbformat
    from nbformat.sign import MemorySignatureStore, NotebookNotary

    nb = nbformat.reads(whole.decode("utf-8"), as_version=4)
    if nb.nbformat < 3:
        return None
    computer = NotebookNotary(
        data_dir=str(notary.db_file.parent),
        secret=notary.secret,
        store_factory=MemorySignatureStore,
    )
    return str(computer.compute_signature(nb))
