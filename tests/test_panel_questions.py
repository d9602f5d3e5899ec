"""The review panel shows the questions MCP clients asked, with who asked, their options as
buttons and room for the person's own words, and answers them through the Session: the answer
is stored signed, where the asking client finds it."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from planbook.model.events import Event
from planbook.sessions.session import Session
from planbook.surfaces.widget.panel import ReviewPanel
from tests.conftest import reopen

CLIENT = "claude-code 2.1.0 (MCP)"


@pytest.fixture
def panel(session: Session) -> ReviewPanel:
    session.propose.edit_cell("c2", "x = 2", reason="a bigger x")
    return ReviewPanel(session)


def questions(panel: ReviewPanel) -> list[dict[str, object]]:
    agent = panel.state["agent"] or {}
    return [d for d in agent.get("decisions", []) if d["kind"] == "person_question"]


def test_a_question_shows_with_its_origin_options_and_a_text_field(
    session: Session, panel: ReviewPanel
) -> None:
    assert questions(panel) == []
    session.ask_person("Drop rows with a missing price?", ["yes", "no"], origin=CLIENT)
    assert questions(panel) == [
        {
            "id": "q1",
            "kind": "person_question",
            "question": "Drop rows with a missing price?",
            "options": ["yes", "no"],
            "allow_text": True,
            "origin": CLIENT,
            "received": None,
        }
    ]


def test_a_question_asked_in_another_process_shows_on_the_next_refresh(
    nb_path: Path, panel: ReviewPanel
) -> None:
    reopen(nb_path).ask_person("Which year?", origin="codex 0.9 (MCP)")
    panel.refresh()
    assert [(q["id"], q["origin"]) for q in questions(panel)] == [("q1", "codex 0.9 (MCP)")]


def test_an_option_button_answers_it_signed(
    session: Session, panel: ReviewPanel, nb_path: Path
) -> None:
    session.ask_person("Drop rows?", ["yes", "no"], origin=CLIENT)
    panel.handle({"action": "answer", "decision_id": "q1", "choice": "no", "text": None})
    assert panel.state["error"] is None
    assert questions(panel) == []
    (stored,) = reopen(nb_path).person_questions()
    assert (stored.answer, stored.choice) == ("no", "no")
    assert reopen(nb_path).answered_here(stored)


def test_typed_words_answer_it(session: Session, panel: ReviewPanel) -> None:
    session.ask_person("Anything to add?", origin=CLIENT)
    panel.handle({"action": "answer", "decision_id": "q1", "choice": "keep the 2023 rows"})
    assert panel.state["error"] is None
    assert session.person_questions()[0].answer == "keep the 2023 rows"


def test_a_questions_text_is_shown_inert(session: Session, panel: ReviewPanel) -> None:
    session.ask_person(
        "<img src=x onerror=alert(1)> ok?\x1b[2J\u202e", ["yes"], origin="evil\x1b]0;x\x07 1"
    )
    (shown,) = questions(panel)
    assert shown["question"] == "<img src=x onerror=alert(1)> ok?\\x1b[2J\\u202e"
    assert "\x1b" not in str(shown["origin"])


def test_an_answer_received_from_elsewhere_is_marked_and_can_be_given_here(
    session: Session, panel: ReviewPanel, nb_path: Path
) -> None:
    session.ask_person("Ship it?", ["yes", "no"], origin=CLIENT)
    nb = nbformat.read(nb_path, as_version=4)
    nb.metadata["planbook"]["questions"][0].update(
        state="answered", answer="yes", answered_by="mallory@far"
    )
    nbformat.write(nb, nb_path)
    panel.refresh()
    (shown,) = questions(panel)
    assert shown["received"] == "mallory@far"
    panel.handle({"action": "answer", "decision_id": "q1", "choice": "no"})
    assert panel.state["error"] is None and questions(panel) == []


def test_a_bad_answer_shows_one_line_and_changes_nothing(
    session: Session, panel: ReviewPanel, nb_path: Path
) -> None:
    session.ask_person("Ship it?", ["yes", "no"], origin=CLIENT)
    session.answer_question("q1", "yes")
    before = nb_path.read_bytes()
    panel.handle({"action": "answer", "decision_id": "q1", "choice": "no"})
    assert "question q1 is answered already" in panel.state["error"]
    assert "\n" not in panel.state["error"]
    assert nb_path.read_bytes() == before


def test_during_a_run_the_panel_asks_to_answer_once_it_ends(
    session: Session, panel: ReviewPanel
) -> None:
    session.ask_person("Ship it?", ["yes", "no"], origin=CLIENT)
    errors: list[str | None] = []

    def during(event: Event) -> None:
        if event.kind == "step_started":
            panel.handle({"action": "answer", "decision_id": "q1", "choice": "yes"})
            errors.append(panel.state["error"])

    session.subscribe(during)
    session.approve()
    assert errors == [
        "a run is in progress: answer the question when it has finished, or press Stop"
    ]
    assert session.person_questions()[0].is_open
    panel.handle({"action": "answer", "decision_id": "q1", "choice": "yes"})
    assert panel.state["error"] is None and session.person_questions()[0].answer == "yes"
