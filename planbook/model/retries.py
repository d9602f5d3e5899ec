"""Which failed step a later step retries: a retry's reason names the step it retries ("retry
of step N", written by planbook.engine.retry), and every surface reads the link here, so a
failed step that was retried is shown as history, not as a failure still to act on."""

from __future__ import annotations

import re
from collections.abc import Sequence

from planbook.model.plan import Step

_RETRY_OF = re.compile(r"retry of step (\d+)\b")


def retry_reason(number: int, reason: str) -> str:
    """The reason of the step that retries step ``number`` (whose reason was ``reason``)."""
    return f"retry of step {number}" + (f": {reason}" if reason else "")


def retried_step_ids(steps: Sequence[Step]) -> set[str]:
    """Ids of the failed steps a later step of ``steps`` (one plan's, in order) retries."""
    retried: set[str] = set()
    for step in steps:
        found = _RETRY_OF.match(step.reason)
        if found is None:
            continue
        number = int(found.group(1))
        if 1 <= number <= len(steps) and steps[number - 1].status == "failed":
            retried.add(steps[number - 1].id)
    return retried
