"""A notebook file opened by a tool outside Jupyter (the ``planbook`` command): its planbook
state, a Session that only shows it or one that edits the file, its planbook metadata stripped
in place, the name an approval is recorded under, and a project's rules files trusted.

The floor below a surface for files: the surface reads the notebook and decides what to say; the
documents, the workspace and the store stay behind these functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from planbook.documents import deep_json
from planbook.documents.file import FileNotebook, atomic_write
from planbook.documents.memory import MemoryNotebook
from planbook.engine.retention import strip_text
from planbook.engine.rules.project import trust_rules_in
from planbook.engine.store import user_name
from planbook.engine.stored_record import parse_state
from planbook.model.store import PlanbookState
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace


def read_notebook_json(source: Path | bytes) -> Any:
    """The JSON of a notebook file (or its bytes), any part nested too deep to hold kept as
    its text (documents/deep_json.py); ValueError when it is not JSON in UTF-8."""
    return deep_json.loads(source if isinstance(source, bytes) else source.read_bytes())


def read_state(metadata: Any, where: str) -> PlanbookState:
    """The planbook state in a notebook's ``metadata["planbook"]`` (None: an empty state);
    ``MetadataError`` naming ``where`` when it is corrupted or from a newer planbook."""
    return parse_state(metadata, where)


def showing_session(path: Path, notebook: Any) -> Session:
    """A Session over an in-memory copy of ``notebook`` (an nbformat node read from ``path``):
    for showing and dry runs, it never writes the file."""
    document = MemoryNotebook(notebook=notebook, description=f"file: {path.name}")
    return Session(document, Workspace(path.parent, protected=(path,)), notebook_path=path)


def editing_session(path: Path, tool: str) -> Session:
    """A Session that edits the notebook file at ``path`` (reject, rollback, gc: no kernel
    needed); ``tool`` is named in the document's description."""
    document = FileNotebook(path, description=f"file: {path.name} ({tool})")
    return Session(document, Workspace(path.parent, protected=(path,)), notebook_path=path)


def strip_metadata(text: str, where: str) -> str:
    """The notebook ``text`` without planbook's metadata, in the file's own style (unchanged
    when there is none); ``MetadataError`` naming ``where`` when it is not a notebook."""
    return strip_text(text, where)


def strip_file(path: Path, where: str) -> bool:
    """Remove planbook's metadata from the notebook file at ``path`` in place (written
    atomically, so an interrupted write loses nothing); False when it had none."""
    text = path.read_text(encoding="utf-8")
    stripped = strip_text(text, where)
    if stripped == text:
        return False
    atomic_write(path.resolve(), stripped.encode("utf-8"))
    return True


def approver() -> str:
    """Who approves from a tool by default: the login name, as the store records it."""
    return user_name()


def trust_rules_files(folder: Path, names: tuple[str, ...] | None = None) -> list[str]:
    """Trust, as this person, the allow rules the rules files ``names`` (default: planbook.toml
    and pyproject.toml) in ``folder`` hold now: one line per file that had any new."""
    return trust_rules_in(folder, names) if names else trust_rules_in(folder)
