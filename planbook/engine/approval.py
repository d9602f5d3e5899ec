"""Which steps a person approved, and the hash that binds execution to exactly those steps."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from planbook.engine.hashing import canonical_json, sha256
from planbook.errors import UnknownStep, UsageMistake
from planbook.model.plan import Plan, Step
from planbook.words import count, plural

StepSelection = None | int | str | Sequence[int]

_RANGE = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def parse_numbers(spec: str | Sequence[int], count: int) -> list[int]:
    """``"1,3-5"`` or ``[1, 3]`` -> sorted 1-based step numbers, each checked against ``count``."""
    numbers: list[int] = []
    if isinstance(spec, str):
        if not spec.strip():
            raise UsageMistake("no steps given: use 3, 1,3-5, or nothing for all")
        for part in spec.split(","):
            match = _RANGE.match(part)
            if match is None:
                raise UsageMistake(
                    f"`{part.strip()}` is not a step number or range: "
                    "use 3, 1,3-5, or nothing for all"
                )
            low = int(match.group(1))
            high = int(match.group(2) or low)
            if high < low:
                raise UsageMistake(f"`{part.strip()}` is an empty range: write it low-high")
            numbers.extend(range(low, high + 1))
    else:
        numbers = [int(n) for n in spec]
    for n in numbers:
        if n < 1:
            raise UsageMistake(f"step numbers start at 1, so `{n}` is not one; see `%plan`")
        if n > count:
            raise UnknownStep(n, count)
    return sorted(set(numbers))


def select(
    plan: Plan, spec: StepSelection, *, statuses: Iterable[str] = ("pending",)
) -> list[Step]:
    """The steps a selection names.

    ``None``: all with ``statuses``; an int n: the first n of them; "1,3-5": those steps.
    """
    steps = plan.steps
    wanted = set(statuses)
    if spec is None or isinstance(spec, bool):
        return [s for s in steps if s.status in wanted]
    if isinstance(spec, int):
        if spec < 1:
            raise UsageMistake(f"step counts start at 1, so `{spec}` selects nothing; see `%plan`")
        open_steps = [s for s in steps if s.status in wanted]
        if spec > len(open_steps):
            raise UsageMistake(
                f"there {plural('is', len(open_steps))} only "
                f"{count(open_steps, '/'.join(sorted(wanted)) + ' step')}, not {spec}; "
                "see `%plan`"
            )
        return open_steps[:spec]
    if isinstance(spec, str) and _RANGE.match(spec) and "-" not in spec and "," not in spec:
        # "%approve 3" means the first three, as in Attocode; "%approve 3-3" means step 3.
        return select(plan, int(spec), statuses=statuses)
    return [steps[n - 1] for n in parse_numbers(spec, len(steps))]


def step_payload(step: Step) -> dict[str, object]:
    return {
        "id": step.id,
        "operation": step.operation.model_dump(mode="json"),
        "base": step.base,
        "run_at_approval": step.run_at_approval,
    }


def approval_hash(steps: Sequence[Step]) -> str:
    """SHA-256 over the canonical JSON of exactly these steps, in this order."""
    return sha256(canonical_json([step_payload(s) for s in steps]))


def steps_for(plan: Plan, step_ids: Sequence[str]) -> list[Step]:
    """The approved steps as they stand now in the plan, in plan order (missing ones dropped)."""
    wanted = set(step_ids)
    return [s for s in plan.steps if s.id in wanted]
