"""Checkpoints: the prior state of every target a step (or a rollback) touches.

Large content lives in content-addressed blobs (see ``planbook.engine.blobs``); a snapshot only
names its blob, so the same source or file is stored once however many checkpoints refer to it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from planbook.model.plan import new_id, now


class CellSnapshot(BaseModel):
    """A cell as it was: absent, or its content blob and where it stood."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cell_id: str
    exists: bool
    blob: str | None = Field(default=None, description="Blob of the cell's JSON when it existed.")
    index: int | None = None
    after: str | None = Field(default=None, description="Id of the cell just above it.")
    after_hash: str = Field(default="", description="Content hash right after the change.")


class FileSnapshot(BaseModel):
    """A file as it was: absent, or the blob of its bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    exists: bool
    blob: str | None = None
    after_hash: str = ""


class Checkpoint(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    id: str = Field(default_factory=lambda: "cp-" + new_id())
    seq: int
    kind: Literal["step", "rollback"] = "step"
    plan: str | None = None
    step: str | None = None
    label: str = ""
    at: datetime = Field(default_factory=now)
    cells: list[CellSnapshot] = Field(default_factory=list)
    files: list[FileSnapshot] = Field(default_factory=list)
    active: bool = Field(default=True, description="False once a rollback has undone it.")
    undid: list[str] = Field(
        default_factory=list, description="For a rollback: the checkpoints it undid."
    )
    undone_by: str | None = None
