"""Persist the planbook state in ``notebook.metadata["planbook"]`` after every change.

Loading validates the whole state against the schema. A state that is corrupted, or written by
a newer planbook, is refused with a message and left exactly as it is: nothing is saved over it.
"""

from __future__ import annotations

import getpass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from planbook.documents.base import NotebookDocument
from planbook.engine.blobs import BlobStore
from planbook.errors import MetadataError, first_problem
from planbook.model.plan import Plan
from planbook.model.store import SCHEMA_VERSION, LogEntry, PlanbookState

METADATA_KEY = "planbook"


def parse_state(raw: Any, where: str = "this notebook") -> PlanbookState:
    if raw is None:
        return PlanbookState()
    if not isinstance(raw, dict):
        raise MetadataError(
            f"planbook metadata in {where} is a {type(raw).__name__}, not an object; it was left "
            "untouched: remove notebook.metadata['planbook'] to start afresh"
        )
    version = raw.get("schema_version")
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise MetadataError(
            f"planbook metadata in {where} has schema {version}, newer than this planbook "
            f"understands ({SCHEMA_VERSION}); it was left untouched: upgrade planbook to use it"
        )
    try:
        return PlanbookState.model_validate(raw)
    except ValidationError as exc:
        loc, problem = first_problem(exc, whole="(top level)")
        raise MetadataError(
            f"planbook metadata in {where} is corrupted at {loc}: {problem}; it was left "
            "untouched: repair it or remove notebook.metadata['planbook'] to start afresh"
        ) from None


class Store:
    """The in-memory state and its copy in the notebook metadata, kept in step."""

    def __init__(self, document: NotebookDocument) -> None:
        self.document = document
        self.state = PlanbookState()
        self._saved: Any = None
        self.user = _user()
        self.load()

    def load(self) -> None:
        raw = self.document.get_metadata(METADATA_KEY)
        self.state = parse_state(raw, _where(self.document))
        self._saved = raw

    def sync(self) -> None:
        """Pick up changes someone else saved (another kernel, the CLI, an undo in the editor)."""
        raw = self.document.get_metadata(METADATA_KEY)
        if raw is not self._saved and raw != self._saved:
            self.state = parse_state(raw, _where(self.document))
            self._saved = raw

    def save(self) -> None:
        dumped = self.state.model_dump(mode="json")
        self.document.set_metadata(METADATA_KEY, dumped)
        self._saved = dumped

    @property
    def blobs(self) -> BlobStore:
        return BlobStore(self.state.blobs)

    def log(self, event: str, detail: str = "") -> None:
        self.state.log.append(
            LogEntry(
                at=datetime.now(UTC).isoformat(timespec="seconds"),
                by=self.user,
                event=event,
                detail=detail,
            )
        )

    def plan_by_id(self, plan_id: str) -> Plan:
        for plan in self.state.plans:
            if plan.id == plan_id:
                return plan
        raise MetadataError(f"plan {plan_id} disappeared from the notebook metadata")


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name in some containers
        return "unknown"


def _where(document: NotebookDocument) -> str:
    path = getattr(document, "path", None)
    return getattr(path, "name", None) or "this notebook"
