"""Which notebook this kernel belongs to, and which backend edits it.

First version: an explicit path or ``JPY_SESSION_NAME`` gives a file backend, otherwise memory.
Live discovery (the Jupyter server and its collaboration room) extends this module.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from planbook.documents.base import NotebookDocument


@dataclass(frozen=True)
class Located:
    document: NotebookDocument
    path: Path | None


def notebook_path_from_env() -> Path | None:
    name = os.environ.get("JPY_SESSION_NAME")
    if not name:
        return None
    path = Path(name)
    if path.suffix != ".ipynb":
        return None
    return path if path.is_absolute() else Path.cwd() / path


def open_document(notebook: str | os.PathLike[str] | None = None) -> Located:
    from planbook.documents.file import FileNotebook
    from planbook.documents.memory import MemoryNotebook

    if notebook is not None:
        path = Path(notebook).resolve()
        return Located(FileNotebook(path, description=f"file: {path.name} (given explicitly)"), path)
    env_path = notebook_path_from_env()
    if env_path is not None and env_path.exists():
        return Located(
            FileNotebook(env_path, description=f"file: {env_path.name} (from JPY_SESSION_NAME)"),
            env_path.resolve(),
        )
    return Located(
        MemoryNotebook(
            description=(
                "memory: no notebook found (JPY_SESSION_NAME is not set and no path was given); "
                "changes stay in this kernel. Use planbook.session(notebook='x.ipynb') to edit a file"
            )
        ),
        None,
    )
