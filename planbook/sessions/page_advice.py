"""What a person must do when an editor page holds the notebook and nothing brings planbook's
changes into that page (no jupyter-collaboration on the server, no planbook extension talking to
the kernel): save before approving, reload from disk after. Said once before the first change
(at load, in `%plan` and the panel's header, and with the first staging), and every "no such
cell" becomes "not in the saved file yet", since planbook reads the saved file, not the page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planbook.errors import CellNotSaved, PlanbookError, UnknownCell, UsageMistake

if TYPE_CHECKING:
    from planbook.documents.locate import Located
    from planbook.sessions.session import Session

#: The one line; kept in the session's warnings while it applies.
RELOAD_ADVICE = (
    "this page gets no live updates from planbook (no jupyter-collaboration, no planbook "
    "extension), and planbook reads the saved file: save the notebook (Ctrl+S) before you stage "
    "or approve, and after approving reload it (File > Reload Notebook from Disk). If you save "
    "the page without reloading, its copy overwrites planbook's changes; if you reload before "
    "saving, your unsaved edits are lost"
)
_FLAG = "unsynced_page"
_SAID = "unsynced_page_said"


#: Positions (``#N``) count the cells of the saved file.
SAVED_ONLY = "positions count the saved cells: save the notebook (Ctrl+S) and try again"
#: `%plan cells` on a saved file without cells.
NO_SAVED_CELLS = (
    "the saved file has no cells yet: save the notebook (Ctrl+S) and try again "
    "(planbook reads the saved file)"
)


def adopt(session: Session, located: Located) -> None:
    """Take what finding the notebook learned into the session (in ``planbook.session``)."""
    for warning in located.warnings:
        if warning not in session.warnings:
            session.warnings.append(warning)
    if located.unsynced_page:
        session.extras[_FLAG] = True
        refresh(session)


def flagged(session: Session) -> bool:
    """Does planbook edit the saved file of a notebook a page may hold unsynced?"""
    return bool(session.extras.get(_FLAG)) and session.document.backend == "file"


def page_link(session: Session) -> bool:
    """Has a page with the planbook extension spoken on an open comm
    (planbook/surfaces/comm/channel.py)? A
    page without it closes the kernel's comm, and a client that ignores comms never speaks."""
    links = session.extras.get("cell_review_links") or []
    return any(
        getattr(link, "heard_from_page", False) and getattr(link, "_unsubscribe", None)
        for link in links
    )


def applies(session: Session) -> bool:
    return flagged(session) and not page_link(session)


def refresh(session: Session) -> None:
    """Keep the advice in the session's warnings exactly while it applies."""
    if applies(session):
        if RELOAD_ADVICE not in session.warnings:
            session.warnings.append(RELOAD_ADVICE)
    elif RELOAD_ADVICE in session.warnings:
        session.warnings.remove(RELOAD_ADVICE)


def with_first_staging(session: Session) -> str | None:
    """The advice, the first time a change is staged in this session (and only then)."""
    refresh(session)
    if not applies(session) or session.extras.get(_SAID):
        return None
    session.extras[_SAID] = True
    return RELOAD_ADVICE


def unknown_cell(session: Session, error: PlanbookError, token: str) -> PlanbookError:
    """``error`` (naming ``token`` found no cell) as the person should hear it: the cell may be
    in the page and not saved yet, and positions count the saved cells only."""
    if not flagged(session):
        return error
    if isinstance(error, UnknownCell):
        return CellNotSaved(error.cell_id)
    if token.strip().startswith("#"):
        return UsageMistake(f"{error}; {SAVED_ONLY}")
    return error
