"""``session.propose.*``: the Python API for proposing changes. Each call becomes one operation,
validated by pydantic, and goes through the session's policy (staged in plan mode).

A cell is named as a person sees it: an id, a unique id prefix, a position (``"#5"``) or a tag
(``planbook.engine.anchors``); the step records the resolved id."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from typing import Any, Protocol

from planbook.documents.base import NotebookDocument, new_cell_id, outline
from planbook.engine import planning
from planbook.engine.anchors import at_position, is_position, resolve
from planbook.engine.projection import Projection
from planbook.engine.rules.preview_fit import auto_preview_on, is_short_and_local
from planbook.errors import PlanbookError, UnknownCell, UsageMistake, invalid_as
from planbook.model.operations import (
    AnyOperation,
    CellType,
    DeleteCell,
    DeleteFile,
    EditCell,
    EditFile,
    InsertCell,
    McpCall,
    MoveCell,
    RunCell,
    Shell,
    TextEdit,
    WriteFile,
)
from planbook.model.plan import Plan, Step
from planbook.sessions import arguments
from planbook.sessions.already_staged import OpenSteps, same_insert
from planbook.sessions.page_advice import PageAdvice
from planbook.workspace.files import Workspace


class Stage(Protocol):
    """How a proposal is staged: the Session's ``stage`` (its policy decides staged or applied)."""

    def __call__(
        self, op: AnyOperation, *, reason: str = "", run: bool = False, origin: str | None = None
    ) -> Step: ...


#: The operations that change which cells exist and where: what naming a cell needs.
_CELL_OPS = (InsertCell, EditCell, DeleteCell, MoveCell)


def build(cls: type[AnyOperation], **fields: Any) -> AnyOperation:
    """Validate operation arguments: a bad one is a one-line `UsageMistake`, never a step."""
    name = cls.__name__
    with invalid_as(
        lambda where, problem: UsageMistake(f"invalid {name} argument `{where}`: {problem}"),
        whole=name,
    ):
        return cls(**fields)


class Proposer:
    """Given the few things of its Session it needs (not the Session: that one makes it)."""

    def __init__(
        self,
        document: NotebookDocument,
        workspace: Workspace,
        *,
        stage: Stage,
        current_plan: Callable[[], Plan | None],
        advice: PageAdvice,
        preview: Callable[[int], object],
        refuse_denied: Callable[[AnyOperation], None] = lambda op: None,
        origin: str | None = None,
    ) -> None:
        self._document = document
        self._workspace = workspace
        self._stage_op = stage
        self._current_plan = current_plan
        self._advice = advice
        #: Runs a staged shell step once in an overlay and records what it changed.
        self._preview = preview
        #: Raises PolicyDenied when the rules as they are now deny ``op``: asked before an open
        #: step making the same change is given back, so a rule added since refuses it too.
        self._refuse_denied = refuse_denied
        #: Who proposes through this proposer when not the kernel's person or agent (an MCP
        #: client's name and version): every step it stages carries it.
        self.origin = origin
        #: Told (step, its number) when a proposal is one an open step already makes: that
        #: step is returned instead of a second one (planbook/sessions/already_staged.py).
        self.on_already_staged: Callable[[Step, int], None] | None = None
        #: The open steps, kept between proposals (planbook/sessions/already_staged.py).
        self._open_steps = OpenSteps()

    def _path(self, path: str) -> str:
        return self._workspace.relative(path)

    def _stage(self, op: AnyOperation, reason: str, run: bool = False) -> Step:
        _check(reason, run)
        open_steps = self._open_steps.of(self._current_plan())
        if not isinstance(op, InsertCell):
            self._refuse_denied(op)
            found = open_steps.same_step(op, run)
            if found is not None:
                return self._already(*found)
        open_steps.refuse_a_cell_being_deleted(op)
        return self._stage_op(op, reason=reason, run=run, origin=self.origin)

    def _already(self, number: int, step: Step) -> Step:
        if self.on_already_staged is not None:
            self.on_already_staged(step, number)
        return step

    def _projection(self) -> Projection:
        """The cells as they will be once the open steps ran: enough to name a cell that a
        staged step inserts. File and shell steps are left out (no file is read for this), and
        a step that no longer applies is passed over: staging itself reports such problems."""
        proj = Projection(outline(self._document), None)
        plan = self._current_plan()
        for step in plan.steps if plan is not None else []:
            if step.status in planning.PROJECTED and isinstance(step.operation, _CELL_OPS):
                with suppress(PlanbookError):
                    proj.apply(step.operation, step.id)
        return proj

    def cell_id(self, token: str) -> str:
        """The id of the cell ``token`` names (id, unique id prefix, ``#N`` or tag)."""
        if isinstance(token, str) and is_position(token):
            # A position names a cell of the notebook as it is: no open step is replayed, and
            # the cells' outline is read, not a copy of every cell. An exact id still wins
            # first (``resolve``), though nbformat's ids never hold "#".
            if self._document.find_cell(token.strip()) is not None:  # by its index, no scan
                return token.strip()
            try:
                return at_position(token, outline(self._document))
            except UsageMistake as exc:
                raise self._advice.unknown_cell(exc, token) from None
        if isinstance(token, str) and self._document.find_cell(token.strip()) is not None:
            # An exact id of a cell in the notebook wins before anything else (``resolve``):
            # no need to replay the open steps, which costs more as the plan grows.
            return token.strip()
        return self._resolve(token, self._projection())

    def _resolve(self, token: str, proj: Projection | None) -> str:
        cells = self._document.cells()
        try:
            return resolve(token, cells, [c.id for c in proj.cells] if proj else [])
        except (UnknownCell, UsageMistake) as exc:
            raise self._advice.unknown_cell(exc, token) from None

    def _maybe(self, token: str | None, proj: Projection) -> str | None:
        return None if token is None else self._resolve(token, proj)

    def insert_cell(
        self,
        source: str,
        *,
        after: str | None = None,
        before: str | None = None,
        cell_type: CellType = "code",
        reason: str = "",
        run: bool = False,
    ) -> Step:
        """Propose a new cell after/before a cell (id, id prefix, ``"#N"`` or tag); at the end
        with neither. Several inserts after one cell land in the order they were staged."""
        _check(reason, run)  # before an open insert is given back for it
        proj = self._projection()
        after, before = self._maybe(after, proj), self._maybe(before, proj)
        # The cell as asked for (no id, no validation: only compared with the open inserts).
        wanted = InsertCell.model_construct(
            source=source, cell_type=cell_type, after=after, before=before
        )
        found = same_insert(self._open_steps.of(self._current_plan()), proj, wanted, run)
        if found is not None:
            return self._already(*found)
        if after is not None and before is None:
            after, before = _keep_plan_order(proj, after)
        op = build(
            InsertCell,
            cell_id=new_cell_id(),
            source=source,
            cell_type=cell_type,
            after=after,
            before=before,
        )
        return self._stage(op, reason, run)

    def edit_cell(self, cell_id: str, source: str, *, reason: str = "", run: bool = False) -> Step:
        """Propose ``source`` as the new source of a cell (id, id prefix, ``"#N"`` or tag)."""
        cell_id = self.cell_id(cell_id)
        return self._stage(build(EditCell, cell_id=cell_id, source=source), reason, run)

    def delete_cell(self, cell_id: str, *, reason: str = "") -> Step:
        return self._stage(build(DeleteCell, cell_id=self.cell_id(cell_id)), reason)

    def move_cell(
        self,
        cell_id: str,
        *,
        after: str | None = None,
        before: str | None = None,
        reason: str = "",
    ) -> Step:
        """Propose moving a cell after another one, or ``before`` one; with neither, to the
        top."""
        if after is not None and before is not None:
            raise UsageMistake("give `after` or `before`, not both")
        proj = self._projection()
        moved = self._resolve(cell_id, proj)
        if before is not None:
            anchor = self._resolve(before, proj)
            if anchor == moved:
                raise UsageMistake(f"cell {moved!r} cannot move before itself")
            others = [c.id for c in proj.cells if c.id != moved]
            at = others.index(anchor)
            target = others[at - 1] if at > 0 else None
        else:
            target = self._maybe(after, proj)
        return self._stage(build(MoveCell, cell_id=moved, after=target), reason)

    def run_cell(self, cell_id: str, *, reason: str = "") -> Step:
        return self._stage(build(RunCell, cell_id=self.cell_id(cell_id)), reason)

    def write_file(self, path: str, content: str, *, reason: str = "") -> Step:
        return self._stage(build(WriteFile, path=self._path(path), content=content), reason)

    def edit_file(
        self, path: str, edits: Sequence[Mapping[str, str] | TextEdit], *, reason: str = ""
    ) -> Step:
        """Propose search/replace edits: ``[{"search": old, "replace": new}, ...]``."""
        if isinstance(edits, (Mapping, str, bytes)) or not isinstance(edits, Iterable):
            raise UsageMistake('`edits` is a list of {"search": ..., "replace": ...} objects')
        return self._stage(build(EditFile, path=self._path(path), edits=tuple(edits)), reason)

    def delete_file(self, path: str, *, reason: str = "") -> Step:
        return self._stage(build(DeleteFile, path=self._path(path)), reason)

    def shell(self, command: str, *, reason: str = "", timeout: float = 60.0) -> Step:
        """Stage a shell command; a short, local one is previewed at once (engine/preview.py,
        ``[preview] auto`` in planbook.toml)."""
        # a str, not what pydantic would make one of (bytes decoded): a command runs as given
        arguments.text(command, "command")
        step = self._stage(build(Shell, command=command, timeout=timeout), reason)
        root = self._workspace.root
        plan = self._current_plan()
        if (
            step.status == "pending"
            and plan is not None
            and step in plan.steps
            and auto_preview_on(root)
            and is_short_and_local(command, root)
        ):
            with suppress(PlanbookError):  # a preview that cannot run leaves the step as staged
                self._preview(plan.steps.index(step) + 1)
            step = self._current_plan().find_step(step.id) or step  # type: ignore[union-attr]
        return step

    def mcp_call(
        self, server: str, tool: str, arguments: Mapping[str, Any], *, reason: str = ""
    ) -> Step:
        """Propose calling ``tool`` of the MCP server ``server`` (planbook.toml's
        ``[mcp.servers]``) with ``arguments``; what it does, rollback cannot undo."""
        if not isinstance(arguments, Mapping):
            raise UsageMistake("`arguments` is an object of the tool's argument names and values")
        try:
            text = json.dumps(dict(arguments), sort_keys=True, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise UsageMistake(f"the arguments of {server}.{tool} are not JSON: {exc}") from None
        return self._stage(build(McpCall, server=server, tool=tool, arguments=text), reason)


def _keep_plan_order(proj: Projection, after: str) -> tuple[str | None, str | None]:
    """(after, before) for a new cell wanted right after ``after``.

    Each insert lands right after its anchor when it runs, so a second insert after the same
    cell would land above the first one. When staged steps already insert cells there, the new
    cell goes instead before the notebook cell that follows them (or at the end), which keeps
    plan order and does not make it depend on those steps (either may be rejected)."""
    at = proj.index(after)
    if at is None or at + 1 >= len(proj.cells) or proj.cells[at + 1].id not in proj.created_by:
        return after, None
    following = next((c.id for c in proj.cells[at + 1 :] if c.id not in proj.created_by), None)
    return None, following


def _check(reason: object, run: object) -> None:
    """A step's ``reason`` and ``run``, as every proposal takes them."""
    arguments.text(reason, "reason")
    arguments.flag(run, "run")
