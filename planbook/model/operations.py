"""The changes a plan can hold: a discriminated union on ``kind``.

Pure data. Targets are cell ids (nbformat 4.5), never indexes, so a step keeps meaning the same
cell when other cells are added above it. The field docs reach the agent's tool schemas too.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from planbook.model.base import PlanbookModel

CellType = Literal["code", "markdown", "raw"]


class _Op(PlanbookModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TextEdit(PlanbookModel):
    """Replace one exact occurrence of `search` with `replace`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    search: str = Field(min_length=1, description="Exact text to find; it must occur exactly once.")
    replace: str = Field(description="Text that takes its place.")


class InsertCell(_Op):
    """Insert a new cell next to an existing one (or at the end)."""

    kind: Literal["insert_cell"] = "insert_cell"
    cell_id: str = Field(description="Id the new cell gets; assigned when the step is staged.")
    source: str = Field(description="The new cell's source.")
    cell_type: CellType = Field(default="code", description="code, markdown or raw.")
    after: str | None = Field(default=None, description="Insert after the cell with this id.")
    before: str | None = Field(default=None, description="Insert before the cell with this id.")

    @model_validator(mode="after")
    def _one_anchor(self) -> InsertCell:
        if self.after is not None and self.before is not None:
            raise ValueError("give `after` or `before`, not both")
        return self


class EditCell(_Op):
    """Give an existing cell a new source."""

    kind: Literal["edit_cell"] = "edit_cell"
    cell_id: str = Field(description="Id of the cell to change.")
    source: str = Field(description="The cell's complete new source.")


class DeleteCell(_Op):
    """Remove a cell."""

    kind: Literal["delete_cell"] = "delete_cell"
    cell_id: str = Field(description="Id of the cell to remove.")


class MoveCell(_Op):
    """Move a cell after another one (after=None moves it to the top)."""

    kind: Literal["move_cell"] = "move_cell"
    cell_id: str = Field(description="Id of the cell to move.")
    after: str | None = Field(description="Id of the cell it goes after; None for the top.")


class RunCell(_Op):
    """Execute a code cell in the kernel and store its outputs in the cell."""

    kind: Literal["run_cell"] = "run_cell"
    cell_id: str = Field(description="Id of the code cell to run.")


class WriteFile(_Op):
    """Create or overwrite a text file in the workspace."""

    kind: Literal["write_file"] = "write_file"
    path: str = Field(description="Path relative to the workspace root.")
    content: str = Field(description="The file's complete new text.")


class EditFile(_Op):
    """Apply search/replace edits to a text file in the workspace."""

    kind: Literal["edit_file"] = "edit_file"
    path: str = Field(description="Path relative to the workspace root.")
    edits: tuple[TextEdit, ...] = Field(min_length=1, description="Edits applied in order.")


class DeleteFile(_Op):
    """Delete a file in the workspace."""

    kind: Literal["delete_file"] = "delete_file"
    path: str = Field(description="Path relative to the workspace root.")


class Shell(_Op):
    """Run a shell command in the workspace root."""

    kind: Literal["shell"] = "shell"
    command: str = Field(min_length=1, description="The command line, run by /bin/sh.")
    timeout: float = Field(default=60.0, gt=0, description="Seconds before it is stopped.")


class McpCall(_Op):
    """Call a tool of an MCP server configured in planbook.toml (``[mcp.servers.NAME]``).

    What the tool does happens outside planbook (a tracker, a database, a remote service), so
    no checkpoint can undo it: rollback leaves it as it is, and the review says so."""

    kind: Literal["mcp_call"] = "mcp_call"
    server: str = Field(
        min_length=1, description="The server's name, as in planbook.toml's [mcp.servers.NAME]."
    )
    tool: str = Field(min_length=1, description="The tool's name on that server.")
    arguments: str = Field(
        default="{}",
        description="The tool's arguments: a JSON object, kept in canonical form (sorted keys) "
        "so the approval hash covers exactly what will be sent.",
    )

    @field_validator("arguments")
    @classmethod
    def _json_object(cls, text: str) -> str:
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"not JSON ({exc})") from None
        if not isinstance(value, dict):
            raise ValueError(f"a JSON object is needed, not {type(value).__name__}")
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    @property
    def args(self) -> dict[str, Any]:
        """The arguments as sent to the tool."""
        value: dict[str, Any] = json.loads(self.arguments)
        return value

    @property
    def name(self) -> str:
        """``server.tool``: what MCP permission rules match."""
        return f"{self.server}.{self.tool}"


AnyOperation = (
    InsertCell
    | EditCell
    | DeleteCell
    | MoveCell
    | RunCell
    | WriteFile
    | EditFile
    | DeleteFile
    | Shell
    | McpCall
)
Operation = Annotated[AnyOperation, Field(discriminator="kind")]
CellOperation = InsertCell | EditCell | DeleteCell | MoveCell | RunCell
FileOperation = WriteFile | EditFile | DeleteFile


def anchors_of(op: AnyOperation) -> list[str]:
    """The cells an operation positions itself against: they must exist when it runs."""
    if isinstance(op, InsertCell):
        return [a for a in (op.after, op.before) if a is not None]
    if isinstance(op, MoveCell) and op.after is not None:
        return [op.after]
    return []


#: The same unions as tuples: ``isinstance`` with a tuple is several times faster than with a
#: union, and a 10,000-step plan asks it for every step each time it is shown.
_CELL_OPERATIONS = (InsertCell, EditCell, DeleteCell, MoveCell, RunCell)
_FILE_OPERATIONS = (WriteFile, EditFile, DeleteFile)


def target_of(op: AnyOperation) -> str:
    """A stable key for what the operation touches: ``cell:<id>``, ``file:<path>``, ``shell``
    or ``mcp:<server>.<tool>``."""
    if isinstance(op, _CELL_OPERATIONS):
        return f"cell:{op.cell_id}"
    if isinstance(op, _FILE_OPERATIONS):
        return f"file:{op.path}"
    if isinstance(op, McpCall):
        return f"mcp:{op.name}"
    return "shell"
