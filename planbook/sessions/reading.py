"""What a Session shows: the cells, the steps as views, the plan as text and markdown, the
checkpoints, the revisions. Nothing here changes the notebook."""

from __future__ import annotations

from planbook.documents.base import outline
from planbook.documents.collector import collector_paused
from planbook.engine.approval import check_step_number
from planbook.model.cell import Cell
from planbook.model.checkpoint import Checkpoint
from planbook.model.plan import (
    Plan,
)
from planbook.model.words import count
from planbook.present.safe import md_text, visible
from planbook.present.text import checkpoints_text, plan_markdown, plan_text, revision_diff
from planbook.present.views import StepView, step_views
from planbook.sessions import arguments
from planbook.sessions.core import SessionCore


class ReadingSession(SessionCore):
    def checkpoints(self) -> list[Checkpoint]:
        self.store.sync()
        return list(self.store.state.checkpoints)

    def cells(self) -> list[Cell]:
        return self.document.cells()

    def step_views(self, plan: Plan | None = None, revision: int | None = None) -> list[StepView]:
        if revision is not None:
            check_step_number(revision, "a revision number")
        plan = arguments.optional_plan(plan) or self.current_plan()
        if plan is None:
            return []
        if revision is not None and revision != plan.current.number:
            plan = plan.model_copy(update={"revisions": [plan.revision(revision)]})
        # the cells' ids, types and sources, not a copy of every cell (a pydantic copy each:
        # a seventh of the text of a 1,000-step plan); thousands of small objects that form
        # no cycle, so no collector pass meanwhile (documents/collector.py)
        with collector_paused():
            return step_views(plan, outline(self.document), self.workspace, self.store.state)

    def render_markdown(self, *, shown_to: str | None = None) -> str:
        """The plan as markdown; ``shown_to``: the surface showing it (``mark_shown``)."""
        arguments.optional_text(shown_to, "shown_to")
        plan = self.current_plan()
        if shown_to is not None:
            self.mark_shown(shown_to, plan.steps if plan else [])
        if plan is None:
            return (
                f"*no plan yet* · mode: {md_text(self.mode)} · "
                f"notebook: {md_text(self.document.description)}\n\n"
                "Stage a step with `%%propose` (anchors: `%plan cells`)."
            )
        with collector_paused():  # the views and their text: see step_views
            return plan_markdown(
                plan, self.step_views(plan), mode=self.mode, backend=self.document.description
            )

    def render_text(self, *, color: bool = False, shown_to: str | None = None) -> str:
        """The plan as text; ``shown_to``: the surface showing it (``mark_shown``)."""
        arguments.optional_text(shown_to, "shown_to")
        plan = self.current_plan()
        if shown_to is not None:
            self.mark_shown(shown_to, plan.steps if plan else [])
        if plan is None:
            where = visible(self.document.description)  # a file name can hold anything
            return f"no plan yet (mode: {self.mode}; notebook: {where})\n"
        with collector_paused():  # the views and their text: see step_views
            return plan_text(
                plan,
                self.step_views(plan),
                mode=self.mode,
                backend=self.document.description,
                color=color,
            )

    def checkpoints_text(self) -> str:
        return checkpoints_text(self.checkpoints(), self.store.state.plans)

    def history(self) -> str:
        plan = self._require_plan()
        lines = []
        for rev in plan.revisions:
            approved = [a for a in plan.approvals if a.revision == rev.number]
            lines.append(
                f"revision {rev.number}"
                + (f" (from {rev.parent})" if rev.parent else "")
                + f": {count(rev.steps, 'step')}"
                + (f"; feedback: {rev.feedback}" if rev.feedback else "")
                + (f"; approved {len(approved)}x" if approved else "")
            )
        return "\n".join(lines)

    def diff_revisions(self, a: int, b: int) -> str:
        return "\n".join(revision_diff(self._require_plan(), a, b))
