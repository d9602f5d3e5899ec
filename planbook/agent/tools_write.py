"""Write tools: every change goes through the Session's propose API, so the mode policy decides.

- plan mode: the change is staged; the tool answers that it is queued and will not exist until
  the person approves, so the agent moves on instead of retrying.
- ask mode (and run/shell in auto-edit, and any "ask" rule): the run pauses (pydantic-ai's
  ``ApprovalRequired``) until the person approves, denies with a reason, or edits the arguments.
- auto-edit / act, or an "allow" rule: applied at once, behind a checkpoint.

Arguments are validated twice, and a bad call never reaches the plan: pydantic-ai validates them
against these signatures (the model gets a retry prompt), and the propose API validates the
operation (its one-line error becomes a ``ModelRetry``).
"""

from __future__ import annotations

from pydantic import ConfigDict, Field
from pydantic_ai import ModelRetry, RunContext

from planbook.agent.context import AgentDeps
from planbook.agent.staging import propose_shell, stage_change
from planbook.agent.tools_read import run_read_only_shell
from planbook.engine.rules.classifier import is_read_only
from planbook.errors import (
    PlanbookError,
)
from planbook.model.base import PlanbookModel
from planbook.model.operations import CellType
from planbook.model.words import count


class Edit(PlanbookModel):
    """Replace one exact occurrence of `search` with `replace`."""

    model_config = ConfigDict(extra="forbid")

    search: str = Field(min_length=1, description="Exact text to find; it must occur exactly once.")
    replace: str = Field(description="Text that takes its place.")


async def insert_cell(
    ctx: RunContext[AgentDeps],
    source: str,
    reason: str,
    after: str | None = None,
    before: str | None = None,
    cell_type: CellType = "code",
    run: bool = False,
) -> str:
    """Propose a new cell after (or before) the cell with that id; at the end with neither.

    Args:
        source: The new cell's source.
        reason: Why the change is wanted, one sentence for the person reviewing it.
        after: Id of the cell the new one goes after.
        before: Id of the cell the new one goes before.
        cell_type: code, markdown or raw.
        run: Also run the new cell once approved.
    """
    where = f"after {after}" if after else f"before {before}" if before else "at the end"
    return await stage_change(
        ctx,
        "insert_cell",
        None,
        f"insert {cell_type} cell {where}",
        lambda: ctx.deps.session.propose.insert_cell(
            source, after=after, before=before, cell_type=cell_type, reason=reason, run=run
        ),
    )


async def edit_cell(
    ctx: RunContext[AgentDeps], cell_id: str, source: str, reason: str, run: bool = False
) -> str:
    """Propose a new source for an existing cell.

    Args:
        cell_id: Id of the cell to change.
        source: The cell's complete new source.
        reason: Why the change is wanted.
        run: Also run the cell once approved.
    """
    return await stage_change(
        ctx,
        "edit_cell",
        cell_id,
        f"edit cell {cell_id}",
        lambda: ctx.deps.session.propose.edit_cell(cell_id, source, reason=reason, run=run),
    )


async def delete_cell(ctx: RunContext[AgentDeps], cell_id: str, reason: str) -> str:
    """Propose deleting a cell.

    Args:
        cell_id: Id of the cell to remove.
        reason: Why.
    """
    return await stage_change(
        ctx,
        "delete_cell",
        cell_id,
        f"delete cell {cell_id}",
        lambda: ctx.deps.session.propose.delete_cell(cell_id, reason=reason),
    )


async def move_cell(
    ctx: RunContext[AgentDeps], cell_id: str, after: str | None, reason: str
) -> str:
    """Propose moving a cell after another one (after=null moves it to the top).

    Args:
        cell_id: Id of the cell to move.
        after: Id of the cell it goes after, or null for the top.
        reason: Why.
    """
    return await stage_change(
        ctx,
        "move_cell",
        cell_id,
        f"move cell {cell_id} after {after}",
        lambda: ctx.deps.session.propose.move_cell(cell_id, after=after, reason=reason),
    )


async def run_cell(ctx: RunContext[AgentDeps], cell_id: str, reason: str) -> str:
    """Propose running a code cell in the kernel (its outputs land in the cell).

    Args:
        cell_id: Id of the code cell (a cell inserted by an earlier step may be used).
        reason: Why.
    """
    return await stage_change(
        ctx,
        "run_cell",
        cell_id,
        f"run cell {cell_id}",
        lambda: ctx.deps.session.propose.run_cell(cell_id, reason=reason),
    )


async def write_file(ctx: RunContext[AgentDeps], path: str, content: str, reason: str) -> str:
    """Propose creating or overwriting a text file in the workspace.

    Args:
        path: Path relative to the workspace root.
        content: The file's complete new text.
        reason: Why.
    """
    return await stage_change(
        ctx,
        "write_file",
        path,
        f"write {path}",
        lambda: ctx.deps.session.propose.write_file(path, content, reason=reason),
    )


async def edit_file(ctx: RunContext[AgentDeps], path: str, edits: list[Edit], reason: str) -> str:
    """Propose search/replace edits to a text file in the workspace.

    Args:
        path: Path relative to the workspace root.
        edits: Edits applied in order; each `search` must occur exactly once.
        reason: Why.
    """
    plain = [e.model_dump() for e in edits]
    return await stage_change(
        ctx,
        "edit_file",
        path,
        f"edit {path} ({count(plain, 'edit')})",
        lambda: ctx.deps.session.propose.edit_file(path, plain, reason=reason),
    )


async def delete_file(ctx: RunContext[AgentDeps], path: str, reason: str) -> str:
    """Propose deleting a file in the workspace.

    Args:
        path: Path relative to the workspace root.
        reason: Why.
    """
    return await stage_change(
        ctx,
        "delete_file",
        path,
        f"delete {path}",
        lambda: ctx.deps.session.propose.delete_file(path, reason=reason),
    )


async def shell(ctx: RunContext[AgentDeps], command: str, reason: str, timeout: float = 60) -> str:
    """Propose a shell command that may change things (run in the workspace root).

    For read-only commands (ls, cat, grep, git status ...) use run_read_only_shell instead.

    Args:
        command: The command line, run by /bin/sh.
        reason: Why.
        timeout: Seconds before it is stopped.
    """
    if is_read_only(command) and ctx.deps.rules.decide("shell", command) is None:
        # Certainly read-only: no need to clutter the plan with it (a rule may still say ask).
        # It runs in the OS sandbox; with no sandbox it is staged after all.
        answer = await run_read_only_shell(ctx, command)
        if answer.startswith("not run at once"):
            return answer
        return "(read-only, so it ran at once in the sandbox instead of being staged)\n" + answer
    return await propose_shell(ctx, command, reason, timeout=timeout)


async def withdraw_step(ctx: RunContext[AgentDeps], step_number: int, reason: str) -> str:
    """Take a pending step out of the plan (kept as rejected), e.g. while revising.

    Stage its replacement first: the last open step cannot be withdrawn (that would close the
    plan).

    Args:
        step_number: The step's number in the plan.
        reason: Why.
    """
    session = ctx.deps.session
    plan = session.current_plan()
    open_steps = [s for s in plan.steps if s.status == "pending"] if plan else []
    if plan is None or not plan.is_open:
        raise ModelRetry("there is no open plan to withdraw a step from")
    if (
        len(open_steps) == 1
        and 1 <= step_number <= len(plan.steps)
        and (plan.steps[step_number - 1] is open_steps[0])
    ):
        raise ModelRetry(
            f"step {step_number} is the last open step: stage its replacement first, then "
            "withdraw it (or tell the person that nothing should change)"
        )
    try:
        session.reject([step_number])
    except PlanbookError as exc:
        raise ModelRetry(str(exc)) from None
    ctx.deps.say("staged", f"step {step_number} withdrawn: {reason}", number=step_number)
    return f"Step {step_number} withdrawn (kept in the plan as rejected)."


WRITE_TOOLS = [
    insert_cell,
    edit_cell,
    delete_cell,
    move_cell,
    run_cell,
    write_file,
    edit_file,
    delete_file,
    shell,
    withdraw_step,
]
