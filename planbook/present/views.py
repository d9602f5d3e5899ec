"""Read-only views of a plan for the surfaces: each step with its target and before/after text."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, cast

from planbook.engine.blobs import BlobStore
from planbook.engine.checkpoints import source_before
from planbook.engine.executor.shell_layer import overlay_off_reason
from planbook.engine.owner import describe, on_this_host
from planbook.engine.planning import PROJECTED
from planbook.engine.projection import Projection, apply_text_edits
from planbook.engine.received import approved_elsewhere
from planbook.errors import PlanbookError, UnknownCell
from planbook.model.cell import CellText, short_ids
from planbook.model.checkpoint import Checkpoint
from planbook.model.operations import (
    AnyOperation,
    CellOperation,
    DeleteCell,
    DeleteFile,
    EditCell,
    EditFile,
    InsertCell,
    McpCall,
    MoveCell,
    RunCell,
    Shell,
    WriteFile,
    anchors_of,
)
from planbook.model.plan import Plan, Step
from planbook.model.preview import ShellPreview
from planbook.model.store import PlanbookState
from planbook.present.safe import md_code
from planbook.workspace.files import Workspace

Language = Literal["python", "markdown", "text", "shell"]
#: The unions of operations as tuples: ``isinstance`` with a tuple is the quicker test, and
#: showing a plan asks it several times for every step.
_CELL_OPERATIONS = (InsertCell, EditCell, DeleteCell, MoveCell, RunCell)
_FILE_OPERATIONS = (WriteFile, EditFile, DeleteFile)
#: The same operations as sets of their classes, for the loops over every step: ``type(op)
#: in`` a set is one hash look-up, where ``isinstance`` with a pydantic model's class that
#: does not match goes through the ABC machinery (about 0.1 µs, a dozen times a step).
#: Operations are never subclassed (a discriminated union on ``kind``).
_CELL_TYPES: frozenset[type] = frozenset(_CELL_OPERATIONS)
#: The operations placed against another cell (``anchors_of``).
_ANCHORED_TYPES: frozenset[type] = frozenset({InsertCell, MoveCell})

#: What every review of an MCP call says: its effect is outside the notebook and the workspace.
MCP_NOTE = "rollback cannot undo it: the tool acts outside planbook"


def mcp_arguments(op: McpCall) -> str:
    """The call's arguments as the person reviews them: pretty JSON, keys sorted."""
    return json.dumps(op.args, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@dataclass(slots=True, kw_only=True)
class StepView:
    """One step as every surface shows it. A plain dataclass, not a pydantic model: it is made
    from a step and cells that were validated already, and validating it again (or pydantic's
    ``model_construct``, slower still) was a third of the time a 1,000-step plan took to show.
    """

    number: int
    id: str
    kind: str
    target: str
    title: str
    reason: str
    risk: str
    status: str
    error: str | None
    before: str
    after: str
    language: Language
    depends_on: list[int]
    checkpoint: str | None
    run_at_approval: bool
    cell_type: str | None = None
    #: Why the change runs code later (held for review in auto-edit mode), or None.
    runs_later: str | None = None
    #: While approved or running: who runs it ("process 412 on host-b"), or None.
    runner: str | None = None
    #: Whether that runner is on another host (so it can only be taken over, never checked).
    runner_elsewhere: bool = False
    #: Who proposed it when it came from outside the kernel (an MCP client's name and version).
    origin: str | None = None
    #: A shell step's preview (model/preview.py), once it was previewed.
    preview: ShellPreview | None = None
    #: On the first shell step where overlays are off: why previews and rollback are.
    shell_note: str = ""
    #: Who approved it on another machine (a received notebook's approval: not authority
    #: here, so the step is pending again), or None.
    approved_elsewhere: str | None = None


def language_for_path(path: str) -> Language:
    if path.endswith(".py"):
        return "python"
    if path.endswith((".md", ".markdown")):
        return "markdown"
    return "text"


#: A cell's language by its type (a raw cell's, or one that is gone, is "text").
_CELL_LANGUAGE: dict[str | None, Language] = {"markdown": "markdown", "code": "python"}


def _cell_type(op: CellOperation, proj: Projection) -> str | None:
    if type(op) is InsertCell:
        return op.cell_type
    try:
        return proj.cell(op.cell_id).cell_type
    except UnknownCell:
        return None


def _language(op: AnyOperation) -> Language:
    """The language of a step that names no cell."""
    if isinstance(op, _FILE_OPERATIONS):
        return language_for_path(op.path)
    if isinstance(op, Shell):
        return "shell"
    return "text"


def _from_checkpoint(op: AnyOperation, cp: Checkpoint, blobs: BlobStore) -> tuple[str, str]:
    before = ""
    for snap in cp.cells:
        if snap.exists:
            before = source_before(blobs, snap) or before
    for fsnap in cp.files:
        if fsnap.exists and fsnap.blob:
            before = blobs.get(fsnap.blob).decode("utf-8", errors="replace")
    match op:
        case InsertCell() | EditCell():
            return before, op.source
        case WriteFile():
            return before, op.content
        case EditFile():
            return before, apply_text_edits(before, op.edits, op.path)
        case DeleteCell() | DeleteFile():
            return before, ""
        case MoveCell() | RunCell() | Shell():
            return before, before
        case McpCall():
            return "", mcp_arguments(op)


def step_title(
    step: Step, proj: Projection | None = None, names: dict[str, str] | None = None
) -> str:
    """``names``: how to show a cell id, such as "#5 `7f3a9c21`" (its position in the notebook
    and short id, as `%plan cells` lists them); without it, the id.

    Every name, path and command is a code span that nothing inside it can close
    (``md_code``), so the title is safe to put into markdown as it is."""
    op = step.operation
    known = names or {}
    match op:  # an edit first: the most common step, and each case is an isinstance
        case EditCell():
            run = " and run it" if step.run_at_approval else ""
            return f"edit cell {_name(known, op.cell_id)}{run}"
        case InsertCell():
            where = (
                f" after {_name(known, op.after)}"
                if op.after
                else f" before {_name(known, op.before)}"
                if op.before
                else " at the end"
            )
            return f"insert {op.cell_type} cell {md_code(op.cell_id)}{where}" + (
                " and run it" if step.run_at_approval else ""
            )
        case DeleteCell():
            return f"delete cell {_name(known, op.cell_id)}"
        case MoveCell():
            return f"move cell {_name(known, op.cell_id)} " + (
                f"after {_name(known, op.after)}" if op.after else "to the top"
            )
        case RunCell():
            return f"run cell {_name(known, op.cell_id)}"
        case WriteFile():
            return f"write file {md_code(op.path)}"
        case EditFile():
            edits = f"{len(op.edits)} edit{'s' if len(op.edits) > 1 else ''}"
            return f"edit file {md_code(op.path)} ({edits})"
        case DeleteFile():
            return f"delete file {md_code(op.path)}"
        case Shell():
            return f"run shell {md_code(op.command)}"
        case McpCall():
            return f"call {md_code(op.name)}"


def _name(names: dict[str, str], cell_id: str) -> str:
    """A cell as a title names it: its position and short id when known, else its id."""
    return names.get(cell_id) or md_code(cell_id)


def _cell_target(cell_id: str, before: str) -> str:
    """A cell step's target: the cell's id and the first line of its text."""
    first = _first_line(before)
    return f"{cell_id}: {first[:60]}" if first else cell_id


def _target(op: AnyOperation, before: str) -> str:
    if isinstance(op, Shell):
        return op.command
    if isinstance(op, McpCall):
        return op.name
    if isinstance(op, _FILE_OPERATIONS):
        return op.path
    return _cell_target(op.cell_id, before)


def _first_line(text: str) -> str:
    """The first line of ``text`` that is not blank, or ""."""
    for line in text.splitlines():
        if line.strip():
            return line
    return ""


def step_views(
    plan: Plan,
    cells: Sequence[CellText],
    workspace: Workspace | None,
    state: PlanbookState,
) -> list[StepView]:
    """What each step of ``plan`` shows, from the notebook's ``state`` (its checkpoints'
    before texts, and which approvals were made here).

    Each step's work is written out in this one loop, each question asked once (is it a cell
    step, is it projected): a 10,000-step plan asks them 10,000 times, and the function calls
    and ``isinstance`` tests of a helper per field were half of the time its text took."""
    checkpoints, blobs = state.checkpoints, BlobStore(state.blobs)
    steps = plan.steps
    proj = Projection(cells, workspace)
    names = _cell_names(cells, steps)
    by_id = {c.id: c for c in checkpoints}
    numbers: dict[str, int] | None = None  # made when a step builds on another
    elsewhere = approved_elsewhere(state, plan) if plan.approvals else {}
    views = []
    off = _shell_off(plan, workspace)
    for number, step in enumerate(steps, start=1):
        op = step.operation
        op_type = type(op)
        cell_op = cast(CellOperation, op) if op_type in _CELL_TYPES else None
        status = step.status
        projected = status in PROJECTED
        cp = by_id.get(step.checkpoint or "")
        cell_type = _cell_type(cell_op, proj) if cell_op is not None else None
        step_error: str | None = None
        # A settled step shows its checkpoint's text: a checkpoint that cannot be read (a
        # corrupted blob, a compression bomb) is said on the step, where the text would be.
        from_checkpoint = cp is not None and not projected
        try:
            if op_type is McpCall:
                before, after = "", mcp_arguments(cast(McpCall, op))
            elif cp is not None and from_checkpoint:
                before, after = _from_checkpoint(op, cp, blobs)
            else:
                before, after = proj.before_after(op)
        except PlanbookError as exc:
            before, after = "", ""
            step_error = str(exc)
        if projected:
            # try, not contextlib.suppress: a tenth of the time, asked for every step
            try:  # noqa: SIM105
                proj.apply(op, step.id)
            except PlanbookError:
                pass  # a step that no longer applies is said by its own view, not here
        depends_on: list[int] = []
        if step.depends_on:
            if numbers is None:
                numbers = {s.id: n for n, s in enumerate(steps, start=1)}
            depends_on = [numbers[d] for d in step.depends_on if d in numbers]
        run_by = step.run_by
        running = run_by is not None and status in ("approved", "running")
        shell = op_type is Shell
        views.append(
            StepView(
                number=number,
                id=step.id,
                kind=op.kind,
                target=(
                    _cell_target(cell_op.cell_id, before)
                    if cell_op is not None
                    else _target(op, before)
                ),
                title=step_title(step, names=names),
                reason=step.reason,
                risk=step.risk,
                status=status,
                error=step.error or (step_error if projected or from_checkpoint else None),
                before=before,
                after=after,
                language=_CELL_LANGUAGE.get(cell_type, "text")
                if cell_op is not None
                else _language(op),
                depends_on=depends_on,
                checkpoint=step.checkpoint,
                run_at_approval=step.run_at_approval,
                origin=step.origin,
                approved_elsewhere=elsewhere.get(step.id) if status == "pending" else None,
                cell_type=cell_type,
                runs_later=step.runs_later,
                runner=describe(run_by) if running and run_by else None,
                runner_elsewhere=running and not on_this_host(run_by or ""),
                preview=step.preview,
                shell_note=off if shell else "",
            )
        )
        if shell:
            off = ""
    return views


def _cell_names(cells: Sequence[CellText], steps: list[Step]) -> dict[str, str]:
    """How each cell a step names is shown: its position and short id (``#5 `7f3a9c21```),
    made only for the cells the steps name (a plan of 10 steps on 2,000 cells names 10)."""
    named: set[str] = set()
    for step in steps:
        op = step.operation
        op_type = type(op)
        if op_type in _CELL_TYPES:
            named.add(cast(CellOperation, op).cell_id)
            if op_type in _ANCHORED_TYPES:
                named.update(anchors_of(op))
    ids = [c.id for c in cells]
    short = short_ids(ids)
    return {
        cell_id: f"#{n} {md_code(short[cell_id])}"
        for n, cell_id in enumerate(ids, start=1)
        if cell_id in named
    }


def _shell_off(plan: Plan, workspace: Workspace | None) -> str:
    """One line for a plan with shell steps where overlays cannot run, else ""."""
    if workspace is None or not any(isinstance(s.operation, Shell) for s in plan.steps):
        return ""
    why = overlay_off_reason(workspace.root)
    return f"previews and shell rollback are off: {why}" if why else ""
