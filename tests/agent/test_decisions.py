"""Decision points: the run awaits, the panel or a magic answers."""

from __future__ import annotations

import asyncio
import threading

import pytest

from planbook.agent.decisions import Decisions
from planbook.errors import UnknownDecision, UsageMistake

pytestmark = pytest.mark.anyio


async def test_a_run_waits_until_the_person_answers() -> None:
    decisions = Decisions()
    seen: list[tuple[str, str]] = []
    decisions.subscribe(lambda what, d: seen.append((what, d.id)))
    future = decisions.ask("Which column?", ["date", "month"])
    await asyncio.sleep(0)
    assert not future.done()
    [pending] = decisions.pending()
    assert pending.question == "Which column?"
    decisions.answer(pending.id, "Month")  # case does not matter
    answer = await future
    assert answer.choice == "month"
    assert decisions.pending() == []
    assert seen == [("asked", pending.id), ("answered", pending.id)]


async def test_answers_by_number_with_reason_or_edited_args() -> None:
    decisions = Decisions()
    future = decisions.ask("Apply?", ["approve", "deny", "edit"], kind="approval")
    decisions.answer(decisions.pending()[0].id, 3, args={"source": "x = 2"})
    answer = await future
    assert (answer.choice, answer.args) == ("edit", {"source": "x = 2"})


async def test_wrong_answers_say_what_to_do() -> None:
    decisions = Decisions()
    decisions.ask("Apply?", ["approve", "deny"])
    with pytest.raises(UsageMistake, match="choose one of: approve, deny"):
        decisions.answer("d1", "maybe")
    with pytest.raises(UsageMistake, match="between 1 and 2"):
        decisions.answer("d1", 5)
    with pytest.raises(UnknownDecision, match="d1"):
        decisions.answer("d9", "approve")
    decisions.cancel_all()
    await asyncio.sleep(0)
    assert decisions.pending() == []


async def test_free_text_when_there_are_no_options() -> None:
    decisions = Decisions()
    future = decisions.ask("What should the column be called?", [])
    decisions.answer("d1", "order_month")
    assert (await future).choice == "order_month"


async def test_answer_from_another_thread() -> None:
    decisions = Decisions()
    future = decisions.ask("Go on?", ["yes", "no"])
    thread = threading.Thread(target=decisions.answer, args=("d1", "yes"))
    thread.start()
    answer = await asyncio.wait_for(future, 30)
    thread.join()
    assert answer.choice == "yes"


async def test_stopping_the_run_removes_its_questions() -> None:
    decisions = Decisions()

    async def run() -> None:
        await decisions.ask("Continue?", ["yes", "no"], kind="doom_loop")

    task = asyncio.create_task(run())
    await asyncio.sleep(0)
    assert len(decisions.pending()) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert decisions.pending() == []
