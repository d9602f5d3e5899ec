"""Checkpoints: the prior state of every target a step (or a rollback) touches.

Large content lives in content-addressed blobs (see ``planbook.engine.blobs``); a snapshot only
names its blob, so the same source or file is stored once however many checkpoints refer to it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Literal

from pydantic import (
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from planbook.model.base import PlanbookModel
from planbook.model.plan import new_id, now


class CellSnapshot(PlanbookModel):
    """A cell as it was: absent, or where it stood and the parts of it the step changed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cell_id: str
    exists: bool = Field(default=True, description="False: the cell did not exist before.")
    blob: str | None = Field(
        default=None, description="Schema 1 only: blob of the whole cell's JSON when it existed."
    )
    parts: dict[str, dict[str, Any]] | None = Field(
        default=None,
        description="The fields the step changed, as they were: each {'json': text} (small), "
        "{'z': compressed JSON} or, for outputs, {'items': [blob key per output]}; a deleted "
        "cell has all.",
    )
    index: int | None = Field(default=None, description="Its position (0 is the top).")
    after: str | None = Field(
        default=None,
        description="Id of the cell just above it, when the step moved or deleted the cell "
        "(rollback puts it back there); none when the step left it in place.",
    )
    after_hash: str = Field(default="", description="Content hash right after the change.")


class FileSnapshot(PlanbookModel):
    """A file as it was: absent, or the blob of its bytes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    exists: bool = Field(default=True, description="False: the file did not exist before.")
    blob: str | None = None
    mode: int | None = Field(default=None, description="Its permission bits (0o755...).")
    after_hash: str = ""
    kind: Literal["file", "folder", "symlink"] | None = Field(
        default=None,
        description="Set for what a shell step's layer changed (a symlink's blob holds its "
        "target; a folder has none); its after_hash then covers kind, mode and bytes. Absent "
        "for file steps, stored as before it existed.",
    )

    @model_serializer(mode="wrap")
    def _without_kind(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        if self.kind is None:
            dumped.pop("kind", None)
        return dumped


class Checkpoint(PlanbookModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    #: How many assignments saved checkpoints have had: lets the store skip looking at every
    #: saved checkpoint when none changed (ClassVar: not a field, not stored).
    changes: ClassVar[int] = 0
    #: Assignments to this checkpoint, and whether the store has saved it (not stored).
    _version: int = PrivateAttr(default=0)
    _saved: bool = PrivateAttr(default=False)
    #: Made by this process (signed when saved), not loaded from the notebook (not stored).
    _made_here: bool = PrivateAttr(default=True)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if not name.startswith("_"):
            # the private values read and set in their dict: through the attributes, pydantic's
            # fallbacks made this bookkeeping four times the cost of the assignment itself
            private = self.__pydantic_private__
            assert private is not None  # (the model has private attributes)
            private["_version"] += 1
            if private["_saved"]:
                Checkpoint.changes += 1

    id: str = Field(default_factory=lambda: "cp-" + new_id())
    seq: int
    kind: Literal["step", "rollback"] = "step"
    plan: str | None = None
    step: str | None = None
    label: str = ""
    #: To the second: it is shown, never compared (``seq`` orders checkpoints).
    at: datetime = Field(default_factory=lambda: now().replace(microsecond=0))
    cells: list[CellSnapshot] = Field(default_factory=list)
    files: list[FileSnapshot] = Field(default_factory=list)
    active: bool = Field(default=True, description="False once a rollback has undone it.")
    undid: list[str] = Field(
        default_factory=list, description="For a rollback: the checkpoints it undid."
    )
    undone_by: str | None = None
    signature: str | None = Field(
        default=None,
        max_length=200,
        description="This person's signature over what it restores (engine/signing.py); "
        "absent or foreign: recorded elsewhere, so restoring it needs a confirmation.",
    )
