"""What a person must do when an editor page holds the notebook and nothing brings planbook's
changes into that page (no jupyter-collaboration on the server, no planbook extension talking to
the kernel): save before approving, reload from disk after. Said once before the first change
(at load, in `%plan` and the panel's header, and with the first staging), and every "no such
cell" becomes "not in the saved file yet", since planbook reads the saved file, not the page.
"""

from __future__ import annotations

from planbook.documents.base import NotebookDocument
from planbook.documents.locate import Located
from planbook.errors import CellNotSaved, PlanbookError, UnknownCell, UsageMistake

#: The one line; kept in the session's warnings while it applies.
RELOAD_ADVICE = (
    "this page gets no live updates from planbook (no jupyter-collaboration, no planbook "
    "extension), and planbook reads the saved file: save the notebook (Ctrl+S) before you stage "
    "or approve, and after approving reload it (File > Reload Notebook from Disk). If you save "
    "the page without reloading, its copy overwrites planbook's changes; if you reload before "
    "saving, your unsaved edits are lost"
)
#: Positions (``#N``) count the cells of the saved file.
SAVED_ONLY = "positions count the saved cells: save the notebook (Ctrl+S) and try again"
#: `%plan cells` on a saved file without cells.
NO_SAVED_CELLS = (
    "the saved file has no cells yet: save the notebook (Ctrl+S) and try again "
    "(planbook reads the saved file)"
)


class PageAdvice:
    """The advice of one session (``session.page_advice``): whether it applies, and whether it
    was said with a first staging. ``warnings`` is the session's list, kept in step with it."""

    def __init__(self, document: NotebookDocument, warnings: list[str]) -> None:
        self._document = document
        self._warnings = warnings
        #: An editor page may hold this notebook unsynced (learned when it was located).
        self.unsynced_page = False
        self._said = False
        #: Pages with the planbook extension that spoke on a comm still open: they bring the
        #: changes into the page, so no advice is needed (planbook/surfaces/comm adds them).
        self._pages: set[object] = set()

    def adopt(self, located: Located) -> None:
        """Take what finding the notebook learned (in ``planbook.session``)."""
        for warning in located.warnings:
            if warning not in self._warnings:
                self._warnings.append(warning)
        if located.unsynced_page:
            self.unsynced_page = True
            self.refresh()

    def flagged(self) -> bool:
        """Does planbook edit the saved file of a notebook a page may hold unsynced?"""
        return self.unsynced_page and self._document.backend == "file"

    def page_joined(self, page: object) -> None:
        """A page with the planbook extension spoke on an open comm (``page``: its link)."""
        self._pages.add(page)
        self.refresh()

    def page_left(self, page: object) -> None:
        """That page's comm closed."""
        self._pages.discard(page)
        self.refresh()

    def applies(self) -> bool:
        return self.flagged() and not self._pages

    def refresh(self) -> None:
        """Keep the advice in the session's warnings exactly while it applies."""
        if self.applies():
            if RELOAD_ADVICE not in self._warnings:
                self._warnings.append(RELOAD_ADVICE)
        elif RELOAD_ADVICE in self._warnings:
            self._warnings.remove(RELOAD_ADVICE)

    def with_first_staging(self) -> str | None:
        """The advice, the first time a change is staged in this session (and only then)."""
        self.refresh()
        if not self.applies() or self._said:
            return None
        self._said = True
        return RELOAD_ADVICE

    def unknown_cell(self, error: PlanbookError, token: str) -> PlanbookError:
        """``error`` (naming ``token`` found no cell) as the person should hear it: the cell
        may be in the page and not saved yet, and positions count the saved cells only."""
        if not self.flagged():
            return error
        if isinstance(error, UnknownCell):
            return CellNotSaved(error.cell_id)
        if token.strip().startswith("#"):
            return UsageMistake(f"{error}; {SAVED_ONLY}")
        return error
