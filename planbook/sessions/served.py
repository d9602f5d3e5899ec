"""Notebooks served to a tool outside the kernel (the MCP server): one notebook, or a folder of
notebooks (the workspace either way).

Reading opens the notebook as a file document, which never writes it (a notebook without
planbook metadata stays byte for byte as it was). Proposing goes through one Session per
notebook, over the same file document the CLI uses; it writes the file only when a step is
staged. Every notebook and file name is confined to the workspace by the Workspace's own
resolution.

A server on a folder may be asked about every notebook in it, and a parsed notebook takes
about twice its file's size in memory: only the ``KEEP`` notebooks read last, and the ``KEEP``
file sessions used last, stay open. One let go is opened again from its file when it is next
named; everything a session knows is in the file (a session that is still answering a call
finishes it, and two sessions on one file are as safe as two processes). A session through a
collaboration room holds a websocket and is what its notebook is read through: it stays.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path

from planbook.documents.base import NotebookDocument
from planbook.documents.file import FileNotebook
from planbook.engine.anchors import resolve
from planbook.engine.received import bind
from planbook.engine.store import METADATA_KEY
from planbook.engine.stored_record import parse_state
from planbook.errors import UsageMistake
from planbook.model.cell import Cell
from planbook.model.store import PlanbookState
from planbook.sessions.served_rooms import file_session, reading_document
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from planbook.workspace.walk import folder_listing, walk_files

#: What a notebook is read through (the file, or the room's shared copy).
ServedDocument = NotebookDocument
#: How a document names itself in its description.
TOOL = "planbook MCP"
#: How many notebooks read, and how many file sessions, stay open (the ones used last).
KEEP = 8


class ServedNotebooks:
    """The served notebook or folder, and the documents and sessions opened on it."""

    def __init__(self, path: Path) -> None:
        given = Path(path).expanduser()
        if not given.exists():
            raise UsageMistake(f"{str(path)!r} does not exist: give a notebook or a folder")
        real = given.resolve()
        if real.is_dir():
            self.root, self.notebook = real, None
        elif real.suffix == ".ipynb":
            self.root, self.notebook = real.parent, real
        else:
            raise UsageMistake(f"{str(path)!r} is not a notebook (.ipynb) or a folder")
        #: Confines every name a client gives; the notebook files are changed by cell steps only.
        self.workspace = Workspace(self.root)
        self._reading: OrderedDict[Path, NotebookDocument] = OrderedDict()
        self._sessions: OrderedDict[Path, Session] = OrderedDict()
        self._lock = threading.Lock()

    def describe(self) -> str:
        if self.notebook is not None:
            return f"the notebook {self.notebook.name} in {self.root}"
        return f"the notebooks in {self.root}"

    # --- naming ----------------------------------------------------------------------------
    def notebook_path(self, name: str | None) -> Path:
        """The notebook ``name`` names (the served one when None), inside the workspace."""
        if name is None or not name.strip():
            if self.notebook is None:
                raise UsageMistake(
                    "say which notebook: this server serves a folder (see list_notebooks)"
                )
            return self.notebook
        path = self.workspace.resolve(name.strip())
        if path.suffix != ".ipynb":
            raise UsageMistake(f"{name!r} is not a notebook (.ipynb); see list_notebooks")
        if not path.is_file():
            raise UsageMistake(f"no notebook {name!r} in the workspace; see list_notebooks")
        return path

    def shown(self, path: Path) -> str:
        """A notebook as the client names it: relative to the workspace."""
        return path.relative_to(self.root).as_posix()

    def notebooks(self) -> list[Path]:
        if self.notebook is not None:
            return [self.notebook]
        return [p for p in walk_files(self.root, self.root) if p.suffix == ".ipynb"]

    # --- reading ---------------------------------------------------------------------------
    def document(self, path: Path) -> ServedDocument:
        """The notebook's document for reading: the file re-read when it changed, never
        written (a server with collaboration reads the room's copy instead)."""
        with self._lock:
            doc = self._reading.get(path)
            if doc is None:
                doc = reading_document(path, TOOL)
                self._reading[path] = doc
            self._reading.move_to_end(path)
            while len(self._reading) > KEEP:
                self._reading.popitem(last=False)  # a file document holds nothing to release
        return doc

    def signature(self, path: Path) -> object:
        """What changes when the notebook changes (every save of the file is an atomic
        rename): what wait_for_review watches before it reads the record again."""
        try:
            info = os.stat(path)
        except OSError:
            return None
        return info.st_ino, info.st_mtime_ns, info.st_size

    def cells(self, path: Path) -> list[Cell]:
        return self.document(path).cells()

    def cell(self, path: Path, name: str) -> tuple[int, Cell]:
        """The cell ``name`` names (an id, an id prefix, ``#N`` or a tag) with its position."""
        cells = self.cells(path)
        cell_id = resolve(name, cells)
        return next((n, c) for n, c in enumerate(cells, start=1) if c.id == cell_id)

    def find_cell(self, path: Path, cell_id: str) -> Cell | None:
        found = self.document(path).find_cell(cell_id)
        return found.cell if found is not None else None

    def listing(self, folder: str, most: int) -> str:
        """A folder of the workspace, confined and bounded, as the agent's read tools list it."""
        return folder_listing(self.workspace, folder, most)

    def read_text(self, path: str) -> str | None:
        return self.workspace.read_text(path)

    def state(self, path: Path) -> PlanbookState:
        """The planbook record as the notebook file holds it now (empty when it has none),
        bound to the notebook's place, so what it carries from elsewhere tells apart
        (engine/received.py)."""
        state = parse_state(self.document(path).get_metadata(METADATA_KEY), path.name)
        bind(state, str(path.resolve()))
        return state

    # --- proposing -------------------------------------------------------------------------
    def session(self, name: str | None) -> Session:
        path = self.notebook_path(name)
        with self._lock:
            session = self._sessions.get(path)
            if session is None:
                session = self.open_session(path)
                self._sessions[path] = session
            self._sessions.move_to_end(path)
            files = [
                p for p, kept in self._sessions.items() if isinstance(kept.document, FileNotebook)
            ]
            for old in files[: max(0, len(files) - KEEP)]:
                # Not closed: a call may still be using it, and a file session holds nothing
                # closing would release (it never runs a step).
                del self._sessions[old]
        return session

    def open_session(self, path: Path) -> Session:
        """A new Session that edits the notebook ``path`` (again after it was let go)."""
        return file_session(self.root, path, TOOL)

    def close(self) -> None:
        """Let go of every session (a live one holds a websocket and a thread)."""
        with self._lock:
            sessions, self._sessions = list(self._sessions.values()), OrderedDict()
        for session in sessions:
            session.close()
