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
import logging
from collections.abc import Sequence
from pathlib import Path

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

    def was_trusted(self, data: Data) -> bool:
        key = _digest(data)
        if key not in self._known:
            self._known = {key: _check(data)}  # only the last file content matters
        return self._known[key]

    def signed(self, new: bytes) -> None:
        """``new``, saved over a trusted file, signed as trusted in turn."""
        self._known = {_digest(new): _sign(new)}

    def carry_over(self, old: bytes, new: bytes) -> None:
        """After saving ``new`` over ``old``: sign ``new`` if ``old`` was trusted. Either way
        what ``new`` is is known without reading it again (one check per file, not per save)."""
        trusted = self.was_trusted(old) and _sign(new)
        self._known = {_digest(new): trusted}


def _notary() -> object | None:
    """This person's notary, or None where none was ever set up (then nothing is trusted)."""
    try:
        # heavy: jupyter_core
        from jupyter_core.paths import jupyter_data_dir

        # the notary's default secret file; building a notary would create its database
        if not (Path(jupyter_data_dir()) / "notebook_secret").is_file():
            return None
        # heavy: nbformat's notary (sqlite, traitlets)
        from nbformat.sign import NotebookNotary

        return NotebookNotary()
    except Exception as exc:  # an unreadable data dir must never stop a save
        log.debug("planbook: no notebook notary (%s)", exc)
        return None


def _check(data: Data) -> bool:
    return _with_notary(data, "check_signature") is True


def _sign(data: bytes) -> bool:
    # as Jupyter reads the file when it opens it, so its check finds this signature
    return _with_notary(data, "sign") is not False


def _with_notary(data: Data, action: str) -> object:
    """The notary's ``action`` on the notebook in ``data`` (read as Jupyter reads it); False
    when there is no notary or it failed (a save never fails for it)."""
    notary = _notary()
    if notary is None:
        return False
    try:
        # heavy: nbformat
        import nbformat

        whole = data if isinstance(data, bytes) else b"".join(data)
        nb = nbformat.reads(whole.decode("utf-8"), as_version=4)
        return getattr(notary, action)(nb)
    except Exception as exc:
        log.warning("planbook: the notebook's trust could not be kept (%s: %s)", action, exc)
        return False
