"""wait_for_review: an agent proposes, waits for the person's decisions, and continues from
the results. The decisions are made in another process (a kernel's panel or magics, the
``planbook`` CLI) that writes the notebook file, so the wait watches the file: a stat every
``POLL_SECONDS``, and a read of the planbook record only when the file changed."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

from planbook.model.plan import OPEN_STATUSES, Plan, Step
from planbook.model.store import PlanbookState
from planbook.model.words import count
from planbook.sessions.served import ServedNotebooks
from planbook.surfaces.mcp.calls import in_thread
from planbook.surfaces.mcp.limits import Notebook, StepIds, WaitSeconds
from planbook.surfaces.mcp.propose_tools import Proposals
from planbook.surfaces.mcp.read_tools import CellFinder, step_lines

#: How often the notebook file is looked at while waiting (a stat: microseconds).
POLL_SECONDS = 0.2


def _find(state: PlanbookState, step_ids: Sequence[str]) -> list[tuple[int, Step, Plan] | None]:
    where: dict[str, tuple[int, Step, Plan]] = {}
    for plan in state.plans:
        for n, step in enumerate(plan.steps, start=1):
            where[step.id] = (n, step, plan)
    return [where.get(i) for i in step_ids]


def _report(
    found: list[tuple[int, Step, Plan] | None], step_ids: Sequence[str], cells: CellFinder
) -> list[str]:
    lines: list[str] = []
    for step_id, hit in zip(step_ids, found, strict=True):
        if hit is None:
            lines.append(f"- step id {step_id}: not in this notebook's plans")
        else:
            lines += step_lines(*hit, cells=cells)
    return lines


async def wait(
    target: ServedNotebooks, path: Path, step_ids: Sequence[str], timeout_s: float
) -> str:
    state = await in_thread(target.state, path)
    deadline = time.monotonic() + timeout_s
    seen = target.signature(path)
    while True:
        found = _find(state, step_ids)
        open_steps = [h for h in found if h is not None and h[1].status in OPEN_STATUSES]
        if not open_steps or time.monotonic() >= deadline:
            break
        await anyio.sleep(min(POLL_SECONDS, max(deadline - time.monotonic(), 0)))
        now = target.signature(path)
        if now != seen:
            seen = now
            state = await in_thread(target.state, path)
    head = (
        "every step is decided:"
        if not open_steps
        else f"timed out after {timeout_s:g} s with {count(open_steps, 'step')} still open "
        "(pending, approved or running): call wait_for_review again to keep waiting"
    )
    return "\n".join([head, *_report(found, step_ids, lambda i: target.find_cell(path, i))])


def register(server: MCPServer, target: ServedNotebooks, proposals: Proposals) -> None:
    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def wait_for_review(
        ctx: Context[Any, Any],
        timeout_s: WaitSeconds = 60.0,
        step_ids: StepIds = None,
        notebook: Notebook = None,
    ) -> str:
        """Wait until the person has decided every step you proposed (approved and run,
        rejected or skipped) or the timeout passes, then answer each step's status and result.
        Approving is the person's: no tool does it."""
        mine = proposals.of(ctx)  # this client's steps, not another agent's
        path = mine.only_notebook() if notebook is None else None
        if path is None:
            path = await in_thread(target.notebook_path, notebook)
        wanted = list(step_ids) if step_ids else list(mine.step_ids.get(path, []))
        if not wanted:
            return "nothing to wait for: you proposed no step to this notebook in this session"
        return await wait(target, path, wanted, timeout_s)
