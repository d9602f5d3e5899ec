"""Which steps a person approved, and the hash that binds execution to exactly those steps."""

from __future__ import annotations

import re
import reprlib
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence

from planbook.engine.hashing import canonical_json, sha256
from planbook.errors import ApprovalMismatch, UnknownStep, UsageMistake
from planbook.model.plan import Plan, Step
from planbook.model.words import count, plural

StepSelection = None | int | str | Sequence[int]

_RANGE = re.compile(r"^\s*#?(\d+)\s*(?:-\s*#?(\d+)\s*)?$")
_HOW = "use 4 (step 4), 1,3-5, `--first N` for the first N pending, or nothing for all"


def parse_numbers(spec: str | Sequence[int], count: int) -> list[int]:
    """``"4"``, ``"1,3-5"`` or ``[1, 3]`` -> sorted 1-based step numbers, each checked against
    ``count``. A number is always a step number, never a count."""
    numbers: list[int] = []
    if isinstance(spec, str):
        if not spec.strip():
            raise UsageMistake(f"no steps given: {_HOW}")
        for part in spec.split(","):
            match = _RANGE.match(part)
            if match is None:
                shown = repr(part.strip())[1:-1]  # one line even if the text has newlines
                raise UsageMistake(f"`{shown}` is not a step number or range: {_HOW}")
            low = int(match.group(1))
            high = int(match.group(2) or low)
            if high < low:
                shown = repr(part.strip())[1:-1]
                raise UsageMistake(f"`{shown}` is an empty range: write it low-high")
            numbers.extend(range(low, high + 1))
    else:
        numbers = [_step_number(n) for n in spec]
        if not numbers:
            raise UsageMistake(f"no steps given: {_HOW}")
    for n in numbers:
        if n < 1:
            raise UsageMistake(f"step numbers start at 1, so `{n}` is not one; see `%plan`")
        if n > count:
            raise UnknownStep(n, count)
    return sorted(set(numbers))


def _step_number(value: object) -> int:
    # bool is an int to Python, but approve(False) meaning "step 0" or "all" would be a trap.
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageMistake(f"`{reprlib.repr(value)}` is not a step number: {_HOW}")
    return value


def check_step_number(value: object, what: str = "a step number") -> int:
    """A single step number given to the API (``skip``, ``move``): an int, not a bool, a float
    or a string; anything else is a one-line `UsageMistake`, the value shown short (reprlib:
    a long string or list is not repeated)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageMistake(
            f"`{reprlib.repr(value)}` is not {what}: give the number `%plan` shows, e.g. 2"
        )
    return value


def check_selection_argument(spec: object, first: object = None) -> None:
    """Refuse what is not a selection (``False``, ``2.5``, ``{...}``) before anything happens:
    each is a one-line `UsageMistake` that says what a selection looks like."""
    if first is not None:
        if isinstance(first, bool) or not isinstance(first, int):
            raise UsageMistake(
                f"first={reprlib.repr(first)} is not a count: give a whole number, e.g. first=3"
            )
        if first < 1:
            raise UsageMistake(f"first={first}: give a count of 1 or more")
        if spec is not None:
            raise UsageMistake(f"give either steps or first, not both (steps={reprlib.repr(spec)})")
        return
    if spec is None or isinstance(spec, str):
        return
    if isinstance(spec, bool) or not isinstance(spec, (int, Sequence)):
        raise UsageMistake(f"`{reprlib.repr(spec)}` is not a step selection: {_HOW}")
    if isinstance(spec, Sequence):
        for n in spec:
            _step_number(n)


def select(
    plan: Plan,
    spec: StepSelection,
    *,
    statuses: Iterable[str] = ("pending",),
    first: int | None = None,
) -> list[Step]:
    """The steps a selection names.

    ``None``: all with ``statuses``; an int n or "n": step n; "1,3-5" or [1, 3]: those steps;
    ``first=n``: the first n steps with ``statuses``. A number means the same on every surface
    (magics, API, CLI, panel): the step's position in ``%plan``.
    """
    check_selection_argument(spec, first)
    steps = plan.steps
    wanted = set(statuses)
    if first is not None:
        open_steps = [s for s in steps if s.status in wanted]
        if first > len(open_steps):
            raise UsageMistake(
                f"there {plural('is', len(open_steps))} only "
                f"{count(open_steps, '/'.join(sorted(wanted)) + ' step')}, not {first}; "
                "see `%plan`"
            )
        return open_steps[:first]
    if spec is None:
        return [s for s in steps if s.status in wanted]
    if isinstance(spec, int):
        spec = [spec]
    return [steps[n - 1] for n in parse_numbers(spec, len(steps))]


def step_payload(step: Step) -> dict[str, object]:
    return {
        "id": step.id,
        "operation": step.operation.model_dump(mode="json"),
        "base": step.base,
        "run_at_approval": step.run_at_approval,
    }


def approval_hash(steps: Sequence[Step]) -> str:
    """SHA-256 over the canonical JSON of exactly these steps, in this order.

    The same bytes as ``canonical_json([step_payload(s) for s in steps])`` (a compact JSON
    list is its items' texts joined by commas), with each step's text reused while what it
    hashes is unchanged: the check before every step of a run then costs a join, not a dump
    of every approved step."""
    return sha256(b"[" + b",".join(map(_payload_text, steps)) + b"]")


#: How many step texts are remembered: more than the steps of the longest plan checked at
#: once (a plan of 10,000 steps emptied a cache of 10,000 at every check and hashed afresh).
_TEXTS_KEPT = 100_000
#: id(step) -> (the step, weakly, what its text was made from, the text); see
#: ``_payload_text``. The step is held weakly and its entry goes with it: held strongly, the
#: steps of every notebook a process had closed stayed (up to 100,000 of them, each with its
#: operation: a file step's whole content).
_TEXTS: dict[int, tuple[weakref.ref[Step], tuple[object, ...], bytes]] = {}


def _payload_text(step: Step) -> bytes:
    """``canonical_json(step_payload(step))``, remembered per step. The operation is frozen
    (pydantic ``frozen``, its parts too), so the same operation object always dumps the same;
    the other parts are compared by value, so any assignment to them makes a fresh text."""
    made_of = (step.operation, step.id, step.base, step.run_at_approval)
    key = id(step)
    hit = _TEXTS.get(key)
    if hit is not None and hit[0]() is step and hit[1][0] is made_of[0] and hit[1] == made_of:
        return hit[2]
    text = canonical_json(step_payload(step))
    if len(_TEXTS) > _TEXTS_KEPT:  # more steps alive than any check needs: start afresh
        _TEXTS.clear()
    # the entry goes when the step does, before its id can be another object's (an entry
    # replaced meanwhile dropped its reference, and with it the call)
    _TEXTS[key] = (weakref.ref(step, _forgetting(key)), made_of, text)
    return text


def _forgetting(key: int) -> Callable[[weakref.ref[Step]], None]:
    """What drops ``_TEXTS``'s entry ``key`` when its step goes."""
    texts = _TEXTS  # held here: at the interpreter's exit a module's names may go first

    def forget(_: weakref.ref[Step]) -> None:
        texts.pop(key, None)

    return forget


def steps_for(plan: Plan, step_ids: Sequence[str]) -> list[Step]:
    """The approved steps as they stand now in the plan, in plan order (missing ones dropped)."""
    wanted = set(step_ids)
    return [s for s in plan.steps if s.id in wanted]


#: What a surface showed the person: step id -> ``approval_hash([step])`` as it was shown.
Shown = dict[str, str]


def step_hashes(steps: Iterable[Step]) -> Shown:
    """Each step's own approval hash, by id: what a surface keeps of the steps it shows."""
    return {s.id: approval_hash([s]) for s in steps}


def check_shown(plan: Plan, chosen: Sequence[Step], shown: str | Mapping[str, str]) -> None:
    """Refuse (one line, nothing approved) when ``chosen`` is not what the person was shown:
    ``shown`` is the hash of exactly the chosen steps, or each shown step's hash by id."""
    if isinstance(shown, str):
        if shown != approval_hash(chosen):
            raise ApprovalMismatch(
                "the steps changed since they were shown (hash mismatch); nothing was approved "
                "or run: review them again with `%plan`"
            )
        return
    numbered = _numbered(plan, chosen)
    changed = [n for n, s in numbered if s.id in shown and shown[s.id] != approval_hash([s])]
    unseen = [n for n, s in numbered if s.id not in shown]
    if changed:
        were = "it was" if len(changed) == 1 else "they were"
        raise ApprovalMismatch(
            f"{_steps(changed)} changed since {were} shown; nothing was approved or run: "
            "review the plan again with `%plan`"
        )
    if unseen:
        raise ApprovalMismatch(
            f"{_steps(unseen)} {plural('was', len(unseen))} not shown here yet; nothing was "
            "approved or run: review the plan with `%plan`, then approve"
        )


def _numbered(plan: Plan, chosen: Sequence[Step]) -> list[tuple[int, Step]]:
    wanted = {id(s) for s in chosen}
    return [(n, s) for n, s in enumerate(plan.steps, 1) if id(s) in wanted]


def _steps(numbers: list[int]) -> str:
    return ("step " if len(numbers) == 1 else "steps ") + ", ".join(map(str, numbers))
