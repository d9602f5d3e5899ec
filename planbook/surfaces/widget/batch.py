"""One click on Approve: the chosen steps, run one at a time through the Session.

Each step is approved and run on its own (``Session.approve([n])``), bound to the content hash
it had when the person clicked, so a step that changed in the meantime is refused, and the run
can stop between two steps: the task yields to the kernel's loop after each one, which is when
a Stop sent from the panel is read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from planbook.errors import PlanbookError
from planbook.model.plan import Step
from planbook.sessions.session import Session

#: Seconds the run yields to the kernel's loop between two steps, so a Stop sent meanwhile is
#: read before the next step starts...
STEP_PAUSE = 0.02
#: ...plus this many more turns of the loop: reading a message takes a few turns (socket, then
#: the kernel's dispatch tasks), and on a loaded machine the pause may pass in fewer.
STEP_TURNS = 20


class Batch:
    def __init__(
        self,
        session: Session,
        steps: Sequence[Step],
        revision: int,
        *,
        by: str = "review panel",
        shown: Mapping[str, str] | None = None,
    ) -> None:
        self.session = session
        self.revision = revision
        #: Who approved, as the plan's record keeps it (the panel, the cell's own button).
        self.by = by
        #: (step id, its hash as the person was shown it), in plan order: ``shown`` (the
        #: page's rendering), else as the steps are now.
        self.steps = [(s.id, (shown or {}).get(s.id) or session.hash_of([s])) for s in steps]
        #: Set from any thread (a Stop message); read before each step.
        self.stop_requested = False
        #: Why the batch ended early, for the panel.
        self.error: str | None = None

    @property
    def step_ids(self) -> list[str]:
        return [step_id for step_id, _ in self.steps]

    async def run(self) -> None:
        for step_id, expected in self.steps:
            if not self.run_one(step_id, expected):
                return
            await asyncio.sleep(STEP_PAUSE)
            for _ in range(STEP_TURNS):
                await asyncio.sleep(0)

    def run_now(self) -> None:
        for step_id, expected in self.steps:
            if not self.run_one(step_id, expected):
                return

    def run_one(self, step_id: str, expected: str) -> bool:
        """Approve and run one step; False ends the batch (and says why in ``error``)."""
        if self.stop_requested:
            self.error = "stopped on request between steps; the rest are still pending"
            return False
        plan = self.session.current_plan()
        step = plan.find_step(step_id) if plan is not None else None
        if plan is None or step is None or plan.current.number != self.revision:
            self.error = (
                "the plan changed during the run; the remaining steps were not run: "
                "review it and approve again"
            )
            return False
        number = plan.steps.index(step) + 1
        if self.session.hash_of([step]) != expected:
            self.error = (
                f"step {number} changed after you approved it; it was not run: "
                "review it and approve again"
            )
            return False
        if step.status != "pending":
            return True
        try:
            report = self.session.approve([number], by=self.by, shown={step_id: expected})
        except PlanbookError as exc:
            self.error = str(exc)
            return False
        if report.stopped:
            self.error = report.stopped
        return report.ok
