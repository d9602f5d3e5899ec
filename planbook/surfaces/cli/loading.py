"""Reading the notebook a ``planbook`` command names: every way the file can be wrong becomes a
``CliError`` with its exit code, and a Session that shows it or edits it.

Also what every command says the same way: a Session call's error as one line with a
``planbook`` command as its fix (``shown``, from ``paths``, gives the notebook as the person
can paste it).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from planbook.errors import CliError, MetadataError, PlanbookError
from planbook.model.store import PlanbookState
from planbook.sessions.open_file import (
    editing_session,
    read_notebook_json,
    read_state,
    showing_session,
)
from planbook.sessions.session import Session
from planbook.surfaces.cli.exit_codes import (
    EXIT_METADATA,
    EXIT_MISSING,
    EXIT_NOT_NOTEBOOK,
    EXIT_NOTHING,
    as_cli_error,
)

_T = TypeVar("_T")


def _nbformat() -> Any:
    """nbformat, untyped: keep its Any in one place."""
    import nbformat  # heavy: nbformat and its JSON schema validator cost a second at start

    return nbformat


def read_nb(source: Path | bytes) -> Any:
    """nbformat's reader (untyped), from a file or from bytes."""
    try:
        if isinstance(source, bytes):
            return _nbformat().reads(source.decode("utf-8"), as_version=4)
        return _nbformat().read(source, as_version=4)
    except RecursionError:  # nested deeper than nbformat reads: its deep parts kept as text
        return _nbformat().from_dict(read_notebook_json(source))


def write_nb(notebook: Any, path: Path) -> None:
    """nbformat's writer: ``notebook`` (a NotebookNode) to ``path``."""
    _nbformat().write(notebook, path)


@dataclass
class Loaded:
    """A notebook file a command named, read and checked."""

    path: Path
    """The file, absolute."""
    nb: Any
    """Its contents (an nbformat NotebookNode)."""
    state: PlanbookState
    """Its planbook metadata, parsed."""


def load(path_text: str, *, need_plan: bool = True) -> Loaded:
    """Read a notebook and its planbook state, turning every way it can be wrong into a CliError."""
    path = Path(path_text).expanduser()
    if not path.exists():
        raise CliError(EXIT_MISSING, f"{path_text}: no such file")
    if path.is_dir():
        raise CliError(EXIT_NOT_NOTEBOOK, f"{path_text}: is a folder, not a notebook (.ipynb)")
    try:
        nb = read_nb(path)
    except Exception as exc:  # nbformat raises JSON, validation and version errors alike
        kind = "not valid JSON" if isinstance(exc, ValueError) else type(exc).__name__
        raise CliError(
            EXIT_NOT_NOTEBOOK, f"{path_text}: not a Jupyter notebook ({kind}); pass an .ipynb file"
        ) from None
    if not isinstance(nb.get("cells"), list):
        raise CliError(EXIT_NOT_NOTEBOOK, f"{path_text}: not a Jupyter notebook (no cells)")
    try:
        state = read_state(nb.metadata.get("planbook"), path.name)
    except MetadataError as exc:
        raise CliError(EXIT_METADATA, exc.said_to("cli", notebook=shlex.quote(path_text))) from None
    if need_plan and not state.plans:
        raise CliError(
            EXIT_NOTHING,
            f"{path_text}: has no planbook plan; stage steps in Jupyter (`%%propose`) "
            "or with planbook.session(notebook=...).propose",
        )
    return Loaded(path.resolve(), nb, state)


def read_session(loaded: Loaded) -> Session:
    """A session over an in-memory copy: for showing, never writes the file."""
    return showing_session(loaded.path, loaded.nb)


def file_session(loaded: Loaded) -> Session:
    """A session that edits the file (reject, rollback: no kernel needed)."""
    return editing_session(loaded.path, "planbook CLI")


def planbook_errors(loaded: Loaded, action: Callable[[], _T]) -> _T:
    """Run a Session call; its errors become one-line CliErrors with the right exit code, their
    fixes named as `planbook` commands on this notebook."""
    try:
        return action()
    except PlanbookError as exc:
        raise as_cli_error(exc, loaded.path) from None
