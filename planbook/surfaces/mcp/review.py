"""wait_for_review: an agent proposes (and asks), waits for the person's decisions and answers,
and continues from the results. The decisions are made in another process (a kernel's panel or
magics, the ``planbook`` CLI) that writes the notebook file, so the wait watches the file: a
stat every ``POLL_SECONDS``, and a read of the planbook record only when the file changed (a
room's version inside a Jupyter server with collaboration; without it, a notebook whose open
page holds it is read through the page's kernel every half second: kernel_staging.py).

Steps and questions are waited for in one call, as an agent that asks "which year?" beside its
proposals continues once the person has dealt with both."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

from planbook.model.plan import OPEN_STATUSES, Plan, Step
from planbook.model.questions import PersonQuestion
from planbook.model.store import PlanbookState
from planbook.model.words import count
from planbook.sessions.served import ServedNotebooks
from planbook.surfaces.mcp.ask import question_lines, question_waits
from planbook.surfaces.mcp.calls import in_thread
from planbook.surfaces.mcp.limits import Notebook, QuestionIds, StepIds, WaitSeconds
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


def _questions(state: PlanbookState, question_ids: Sequence[str]) -> list[PersonQuestion | None]:
    where = {q.id: q for q in state.questions}
    return [where.get(i) for i in question_ids]


def _question_report(
    state: PlanbookState, found: list[PersonQuestion | None], question_ids: Sequence[str]
) -> list[str]:
    lines: list[str] = []
    for question_id, question in zip(question_ids, found, strict=True):
        if question is None:
            lines.append(f"- question {question_id}: not asked in this notebook")
        else:
            lines += question_lines(state, question)
    return lines


async def wait(
    target: ServedNotebooks,
    path: Path,
    step_ids: Sequence[str],
    timeout_s: float,
    question_ids: Sequence[str] = (),
) -> str:
    state = await in_thread(target.state, path)
    deadline = time.monotonic() + timeout_s
    seen = target.signature(path)
    while True:
        found = _find(state, step_ids)
        open_steps = [h for h in found if h is not None and h[1].status in OPEN_STATUSES]
        asked = _questions(state, question_ids)
        open_questions = [q for q in asked if q is not None and question_waits(state, q)]
        waiting = len(open_steps) + len(open_questions)
        if not waiting or time.monotonic() >= deadline:
            break
        await anyio.sleep(min(POLL_SECONDS, max(deadline - time.monotonic(), 0)))
        now = target.signature(path)
        if now != seen:
            seen = now
            state = await in_thread(target.state, path)
    if not waiting:
        head = {
            (True, False): "every step is decided:",
            (False, True): "every question is answered:",
        }.get((bool(step_ids), bool(question_ids)), "every step is decided and question answered:")
    else:
        still = [
            *([count(open_steps, "step")] if open_steps else []),
            *([count(open_questions, "question")] if open_questions else []),
        ]
        how = [
            *(["pending, approved or running"] if open_steps else []),
            *(["unanswered"] if open_questions else []),
        ]
        head = (
            f"timed out after {timeout_s:g} s with {' and '.join(still)} still open "
            f"({'; '.join(how)}): call wait_for_review again to keep waiting"
        )
    steps = _report(found, step_ids, lambda i: target.find_cell(path, i))
    return "\n".join([head, *steps, *_question_report(state, asked, question_ids)])


def register(server: MCPServer, target: ServedNotebooks, proposals: Proposals) -> None:
    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def wait_for_review(
        ctx: Context[Any, Any],
        timeout_s: WaitSeconds = 60.0,
        step_ids: StepIds = None,
        notebook: Notebook = None,
        question_ids: QuestionIds = None,
    ) -> str:
        """Wait until the person has decided every step you proposed (approved and run,
        rejected or skipped) and answered every question you asked, or the timeout passes,
        then answer each step's status and result and each question's answer. Approving and
        answering are the person's: no tool does them."""
        mine = proposals.of(ctx)  # this client's steps and questions, not another agent's
        path = mine.only_notebook() if notebook is None else None
        if path is None:
            path = await in_thread(target.notebook_path, notebook)
        if step_ids or question_ids:  # named: only those
            steps, asked = list(step_ids or []), list(question_ids or [])
        else:
            steps = list(mine.step_ids.get(path, []))
            asked = list(mine.question_ids.get(path, []))
        if not steps and not asked:
            return (
                "nothing to wait for: you proposed no step and asked no question in this "
                "notebook in this session"
            )
        return await wait(target, path, steps, timeout_s, asked)
