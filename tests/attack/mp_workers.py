"""What each process of tests/attack/test_multiprocess.py does (imported by spawned children)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from planbook.documents.file import FileNotebook
from planbook.errors import PlanbookError
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace


def open_session(path: Path) -> Session:
    return Session(
        FileNotebook(path), Workspace(path.parent, protected=(path,)), notebook_path=path
    )


def approve_each(jobs: list[tuple[str, str]], barrier: Any, results: Any) -> None:
    """For each (notebook, steps): open a session, wait for the others, approve at once."""
    for path, spec in jobs:
        session = open_session(Path(path))
        barrier.wait(timeout=60)
        try:
            report = session.approve(spec)
            outcome = ("ran", [(o.number, o.status) for o in report.outcomes], str(report))
        except PlanbookError as exc:
            outcome = ("refused", [], str(exc))
        except Exception as exc:  # the suite counts these: there must be none
            outcome = ("raw", [], f"{type(exc).__name__}: {exc}")
        results.put((path, spec, *outcome))
        session.close()
