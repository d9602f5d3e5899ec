"""Asking the person over MCP: ask_person records the question and answers at once,
wait_for_review brings back the person's answer (given with `planbook answer`) or "still open"
at the timeout, no tool lets a client answer itself, and an answer not signed by the person
here is never handed to the client as theirs."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import nbformat

from tests.support.cli import run_planbook as planbook_cli
from tests.support.engine import write_notebook
from tests.support.mcp_client import connect, ok, refused


def notebook(folder: Path) -> Path:
    return write_notebook(folder / "prices.ipynb", ["prices = [3, None, 5]"])


def test_ask_wait_and_get_the_persons_answer(tmp_path: Path) -> None:
    path = notebook(tmp_path)
    before = nbformat.read(path, as_version=4).cells

    async def main() -> None:
        async with connect(path, name="claude-code", version="2.1.0") as session:
            started = time.monotonic()
            asked = await ok(
                session,
                "ask_person",
                question="Drop the rows with a missing price?",
                options=["yes", "no"],
            )
            assert time.monotonic() - started < 5  # answered at once, not after the person
            assert asked.startswith("Asked question q1 in prices.ipynb")

            nb = nbformat.read(path, as_version=4)
            assert nb.cells == before  # the question is all that changed
            (stored,) = nb.metadata["planbook"]["questions"]
            assert (stored["origin"], stored["state"]) == ("claude-code 2.1.0 (MCP)", "open")

            waited = await ok(session, "wait_for_review", timeout_s=0.5)
            assert waited.startswith("timed out after 0.5 s with 1 question still open")
            assert "q1: Drop the rows with a missing price?" in waited
            assert "still open: the person has not answered" in waited

            shown = planbook_cli("show", str(path))
            assert shown.returncode == 0, shown.stderr
            assert "q1 (from claude-code 2.1.0 (MCP)): Drop the rows with a missing price?" in (
                shown.stdout
            )
            assert "[yes / no]" in shown.stdout

            async def person_answers() -> None:
                await anyio.sleep(0.5)
                done = await anyio.to_thread.run_sync(
                    lambda: planbook_cli("answer", str(path), "q1", "1")
                )
                assert done.returncode == 0, done.stderr
                assert done.stdout.rstrip().endswith(": yes")

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(person_answers)
                waited = await ok(session, "wait_for_review", timeout_s=60)
            assert waited.startswith("every question is answered:")
            assert "answered by " in waited and waited.rstrip().endswith(": yes")

            after = planbook_cli("show", str(path))
            assert "questions for you" not in after.stdout

    anyio.run(main)


def test_steps_and_questions_are_waited_for_together(tmp_path: Path) -> None:
    path = notebook(tmp_path)

    async def main() -> None:
        async with connect(path) as session:
            await ok(
                session, "propose_edit_cell", cell="c1", source="prices = [3, 5]", reason="tidy"
            )
            await ok(session, "ask_person", question="Which year?")
            waited = await ok(session, "wait_for_review", timeout_s=0.2)
            assert "with 1 step and 1 question still open" in waited
            only = await ok(session, "wait_for_review", timeout_s=0, question_ids=["q1"])
            assert "1 question still open" in only and "step id" not in only
            assert planbook_cli("answer", str(path), "q1", "2024", "only").returncode == 0
            assert planbook_cli("reject", str(path)).returncode == 0
            waited = await ok(session, "wait_for_review", timeout_s=30)
            assert waited.startswith("every step is decided and question answered:")
            assert "[rejected]" in waited and waited.rstrip().endswith(": 2024 only")

    anyio.run(main)


def test_no_tool_lets_a_client_answer_its_own_question(tmp_path: Path) -> None:
    path = notebook(tmp_path)

    async def main() -> None:
        async with connect(path) as session:
            await ok(session, "ask_person", question="Delete the raw data?", options=["yes", "no"])
            tools = {t.name: t for t in (await session.list_tools()).tools}
            answering = [n for n in tools if "answer" in n or "decide" in n or "respond" in n]
            assert answering == []
            for name in ("answer_question", "answer", "respond", "approve"):
                said = await refused(session, name, question_id="q1", answer="yes")
                assert "unknown tool" in said
            said = await refused(session, "ask_person", question="again?", answer="yes")
            assert "takes no argument 'answer'" in said
            # nor by writing the notebook file: refused, it changes by cell steps only
            said = await refused(
                session,
                "propose_write_file",
                path="prices.ipynb",
                content="{}",
                reason="answer q1 myself",
            )
            assert "is the notebook itself" in said
            waited = await ok(session, "wait_for_review", timeout_s=0, question_ids=["q1"])
            assert "still open: the person has not answered" in waited
            (stored,) = nbformat.read(path, as_version=4).metadata["planbook"]["questions"]
            assert stored["state"] == "open"

    anyio.run(main)


def test_an_answer_not_signed_here_is_not_handed_to_the_client(tmp_path: Path) -> None:
    path = notebook(tmp_path)

    async def main() -> None:
        async with connect(path) as session:
            await ok(session, "ask_person", question="Push to production?", options=["yes", "no"])
            nb = nbformat.read(path, as_version=4)
            forged = nb.metadata["planbook"]["questions"][0]
            forged.update(state="answered", answer="yes", choice="yes", answered_by="x@y")
            nbformat.write(nb, path)
            waited = await ok(session, "wait_for_review", timeout_s=0.5)
            assert "timed out" in waited
            assert "not given by the person here" in waited
            assert "answered by" not in waited

    anyio.run(main)


def test_two_clients_asking_at_once_keep_both_questions(tmp_path: Path) -> None:
    path = notebook(tmp_path)

    async def client(name: str) -> str:
        async with connect(path, name=name) as session:
            return await ok(session, "ask_person", question=f"a question from {name}?")

    async def main() -> None:
        answers: dict[str, str] = {}

        async def run(name: str) -> None:
            answers[name] = await client(name)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run, "first")
            tasks.start_soon(run, "second")
        ids = sorted(a.split()[2] for a in answers.values())
        assert ids == ["q1", "q2"]

    anyio.run(main)
    stored = nbformat.read(path, as_version=4).metadata["planbook"]["questions"]
    assert sorted(q["origin"] for q in stored) == ["first 1.0 (MCP)", "second 1.0 (MCP)"]


def test_bad_questions_are_refused_in_one_line_and_change_nothing(tmp_path: Path) -> None:
    path = notebook(tmp_path)
    before = path.read_bytes()

    async def main() -> None:
        async with connect(path) as session:
            assert "question" in await refused(session, "ask_person", question="x" * 2001)
            assert "options" in await refused(
                session, "ask_person", question="pick", options=[str(n) for n in range(11)]
            )
            assert "say the same thing" in await refused(
                session, "ask_person", question="pick", options=["yes", "Yes"]
            )
            assert "not a notebook" in await refused(
                session, "ask_person", question="ok?", notebook="notes.txt"
            )

    anyio.run(main)
    assert path.read_bytes() == before
