"""Previews of shell steps, run in the foreground (a magic, the CLI) or off the kernel's main
thread (the panel, the in-cell review), one at a time per step.

A preview runs the command once in an overlay (engine/preview.py) and can take up to its time
limit. Reading the step and keeping the result are short transactions on the Session, made on
the calling thread; only the command's run goes to a worker thread in ``preview_async``, so the
kernel keeps handling messages while it runs. Which steps are being previewed is kept here, so
a second preview of the same step is refused and every surface can say "previewing...".
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field

from planbook.engine.approval import check_step_number
from planbook.engine.preview import preview_shell, shell_step
from planbook.errors import UsageMistake
from planbook.model.operations import Shell
from planbook.model.preview import ShellPreview
from planbook.sessions.reading import ReadingSession


@dataclass
class _InFlight:
    """The ids of the steps whose preview is running now."""

    ids: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


class PreviewingSession(ReadingSession):
    @property
    def previewing(self) -> frozenset[str]:
        """Ids of the shell steps being previewed right now."""
        flight = self.attached(_InFlight)
        with flight.lock:
            return frozenset(flight.ids)

    def preview(self, number: int) -> ShellPreview:
        """Run shell step ``number`` once in the sandbox with the workspace as an overlay (no
        network, the sandbox's limits; nothing reaches the workspace) and keep on the step
        what it would change, for every surface's review (engine/preview.py)."""
        step_id, op = self._begin_preview(number)
        try:
            preview = preview_shell(self.workspace, op)
        except BaseException:
            self._end_preview(step_id)
            raise
        return self._keep_preview(number, step_id, preview)

    async def preview_async(self, number: int) -> ShellPreview:
        """``preview`` with the command run on a worker thread: call it on the kernel's main
        loop; the loop (messages, the panel, other cells' comms) stays free meanwhile."""
        step_id, op = self._begin_preview(number)
        self._changed(plan=self.current_plan())  # the surfaces show "previewing..."
        try:
            preview = await asyncio.to_thread(preview_shell, self.workspace, op)
        except BaseException:
            self._end_preview(step_id)
            raise
        return self._keep_preview(number, step_id, preview)

    def _begin_preview(self, number: int) -> tuple[str, Shell]:
        """The step's id and command, marked as being previewed; a preview of it already
        running is refused in one line."""
        check_step_number(number)
        with self._editing():
            step, op = shell_step(self._require_plan(), number)
        flight = self.attached(_InFlight)
        with flight.lock:
            if step.id in flight.ids:
                raise UsageMistake(
                    f"step {number} is being previewed already: its preview shows when the "
                    "command ends (at most its time limit)"
                )
            flight.ids.add(step.id)
        return step.id, op

    def _end_preview(self, step_id: str) -> None:
        flight = self.attached(_InFlight)
        with flight.lock:
            flight.ids.discard(step_id)
        self._changed(plan=self.current_plan())

    def _keep_preview(self, number: int, step_id: str, preview: ShellPreview) -> ShellPreview:
        try:
            with self._editing():
                plan = self._require_plan()
                found = plan.find_step(step_id)
                if found is None:
                    raise UsageMistake(f"step {number} left the plan while it was previewed")
                found.preview = preview
                self.store.log("preview", f"{step_id}: {preview.summary}")
                self.store.save()
        finally:
            self._end_preview(step_id)
        return preview
