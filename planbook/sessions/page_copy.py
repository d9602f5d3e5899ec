"""The notebook as its open page holds it, carried out of the kernel to be read elsewhere.

Without collaboration the open JupyterLab page is the notebook (documents/page.py): the file is
only what the person saved last. The kernel's session mirrors the page; ``page_text`` gives that
mirror as notebook JSON, and ``page_copy`` reads such a text back as a document of its own that
nothing writes, so the MCP endpoint's reads and its wait for a decision see the steps, answers
and outputs the page holds before the person saves them.
"""

from __future__ import annotations

from pathlib import Path

from planbook.documents import deep_json
from planbook.documents.base import NotebookDocument
from planbook.documents.memory import MemoryNotebook
from planbook.documents.page import PageNotebook
from planbook.documents.serializer import JUPYTER, Encoder
from planbook.sessions.session import Session


def attached_page(session: Session) -> PageNotebook | None:
    """The session's page document when it is one and a page is connected to it, else None."""
    document = session.document
    if isinstance(document, PageNotebook) and document.connected:
        return document
    return None


def awaits_page(session: Session) -> bool:
    """The session edits through a page (no collaboration, planbook's page extension found)
    but no page is connected to it yet."""
    return isinstance(session.document, PageNotebook) and not session.document.connected


def page_text(page: PageNotebook) -> str:
    """The page's notebook (as the kernel's mirror holds it) as notebook JSON text."""
    return Encoder(JUPYTER).encode(page.tree)


def page_copy(text: str, path: Path) -> NotebookDocument:
    """A document over ``text`` (``page_text``'s), for reading: it is never saved anywhere."""
    return MemoryNotebook(
        notebook=deep_json.loads(text),
        description=f"page: {path.name} as its open page holds it (read through its kernel)",
    )
