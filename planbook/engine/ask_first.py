"""Ask before a step: give a step its question, pause a run on it, take the answer.

The question is data on the step (``Step.ask_first``), so whoever sets it (the agent's
``ask_before_step``, the Python API) and whoever answers it (``%answer``, the panel, the API)
meet in the plan; the executor pauses on it by itself. Pure functions on a plan: the Session
saves what they change, inside its transaction.
"""

from __future__ import annotations

from collections.abc import Sequence

from planbook.errors import UsageMistake
from planbook.model.plan import STOP_HERE, AskFirst, Plan, Step


def ask(plan: Plan | None, number: int, question: str, options: Sequence[str]) -> AskFirst:
    """Make pending step ``number`` ask ``question`` before it runs (``STOP_HERE`` is always
    offered last); a question it had is replaced."""
    if plan is None or not plan.is_open or not 1 <= number <= len(plan.steps):
        count = len(plan.steps) if plan else 0
        raise UsageMistake(f"there is no step {number} to ask about (the plan has {count})")
    step = plan.steps[number - 1]
    if step.status != "pending":
        raise UsageMistake(f"step {number} is {step.status}: only a pending step can ask first")
    step.ask_first = AskFirst(
        question=question,
        options=[*dict.fromkeys([*options, STOP_HERE])],
    )
    return step.ask_first


def pause(plan: Plan, step: Step, number: int) -> str | None:
    """Why a run stops before ``step`` (number ``number``), in one line, when its question is
    unanswered; the approved steps it holds back are noted on the question. None: it runs."""
    asked = step.ask_first
    if asked is None or asked.answer is not None:
        return None
    step.ask_first = asked.model_copy(
        update={"held_back": [s.id for s in plan.steps if s.status == "approved"]}
    )
    return (
        f"paused before step {number}: {asked.question} — answer it "
        f"({' / '.join(asked.options)}) with `%answer`, in the panel or with "
        f"`session.answer_step({number}, choice)`; the approved steps from there run once "
        "you answer"
    )


def waiting(plan: Plan | None) -> list[tuple[int, Step]]:
    """The steps of ``plan`` a run paused on, with their numbers, whose question is unanswered."""
    if plan is None:
        return []
    return [
        (number, step)
        for number, step in enumerate(plan.steps, start=1)
        if step.ask_first is not None and step.ask_first.waiting
    ]


def answer(plan: Plan, number: int, choice: str | int) -> tuple[str, list[int]]:
    """Record the answer to step ``number``'s question: ``choice`` is one of its options (or
    the option's 1-based number). Returns the option and the numbers of the steps the pause
    held back that are to be approved again (none for ``STOP_HERE``)."""
    if not 1 <= number <= len(plan.steps):
        raise UsageMistake(f"there is no step {number} (the plan has {len(plan.steps)})")
    asking = plan.steps[number - 1]
    asked = asking.ask_first
    if asked is None:
        raise UsageMistake(f"step {number} asks nothing before it runs; see `%plan`")
    if asked.answer is not None:
        raise UsageMistake(f"step {number}'s question was answered already: {asked.answer}")
    chosen = _option(asked, number, choice)
    held_back = set(asked.held_back)
    asking.ask_first = asked.model_copy(update={"answer": chosen, "held_back": []})
    if chosen == STOP_HERE:
        return chosen, []
    again = [
        n
        for n, step in enumerate(plan.steps, start=1)
        if step.id in held_back and step.status == "pending"
    ]
    return chosen, again


def _option(asked: AskFirst, number: int, choice: str | int) -> str:
    options = asked.options
    if isinstance(choice, int) and not isinstance(choice, bool):
        if 1 <= choice <= len(options):
            return options[choice - 1]
    elif isinstance(choice, str):
        by_text = {option.lower(): option for option in options}
        if choice.strip().lower() in by_text:
            return by_text[choice.strip().lower()]
    raise UsageMistake(
        f"{choice!r} is not an option of step {number}'s question; choose one of: "
        + ", ".join(options)
    )
