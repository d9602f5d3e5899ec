"""The save-and-reload advice (planbook/sessions/page_advice.py), on the Session directly: said
while a page may hold the file unsynced, gone while a page with the extension is linked, back
when that page goes; a missing cell named as "not saved yet". The kernel's side of it (what
`%load_ext`, `%plan` and `%%propose` print) is tested in tests/test_headless_page.py."""

from __future__ import annotations

import pytest

from planbook.documents.locate import Located
from planbook.errors import CellNotSaved, UnknownCell, UsageMistake
from planbook.sessions.page_advice import RELOAD_ADVICE
from planbook.sessions.session import Session


def test_the_advice_follows_the_pages_that_are_linked(session: Session) -> None:
    assert RELOAD_ADVICE not in session.warnings  # a file no page holds: nothing to say
    located = Located(session.document, session.notebook_path, ("found it",), unsynced_page=True)
    session.page_advice.adopt(located)
    assert session.warnings == ["found it", RELOAD_ADVICE]
    page = object()
    session.page_advice.page_joined(page)  # the page with the extension spoke on its comm
    assert RELOAD_ADVICE not in session.warnings
    session.page_advice.page_left(page)  # its comm closed: the page no longer follows
    assert session.warnings == ["found it", RELOAD_ADVICE]


def test_the_first_staging_says_it_once(session: Session) -> None:
    session.page_advice.adopt(Located(session.document, None, unsynced_page=True))
    assert session.page_advice.with_first_staging() == RELOAD_ADVICE
    assert session.page_advice.with_first_staging() is None
    assert RELOAD_ADVICE in session.warnings  # still said in `%plan` and the panel


def test_a_cell_the_file_lacks_is_named_not_saved_yet(session: Session) -> None:
    with pytest.raises(UnknownCell, match="no cell with id 'draft-cell'"):
        session.propose.edit_cell("draft-cell", "y = 2")  # no page: the plain error
    session.page_advice.adopt(Located(session.document, None, unsynced_page=True))
    with pytest.raises(CellNotSaved, match="draft-cell"):
        session.propose.edit_cell("draft-cell", "y = 2")
    with pytest.raises(UsageMistake, match="positions count the saved cells"):
        session.propose.edit_cell("#9", "y = 2")
    assert session.current_plan() is None  # nothing was staged
