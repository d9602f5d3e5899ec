"""Counted nouns read right: "1 step", "2 steps"; and the messages that use them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from planbook.errors import UsageMistake
from planbook.model.words import count, plural
from planbook.sessions.session import Session


@pytest.mark.parametrize(
    ("n", "noun", "expected"),
    [
        (0, "step", "0 steps"),
        (1, "step", "1 step"),
        (2, "step", "2 steps"),
        (1, "pending step", "1 pending step"),
        (3, "code cell", "3 code cells"),
        (2, "entry", "2 entries"),
        ([object()], "cell", "1 cell"),
        ([], "cell", "0 cells"),
    ],
)
def test_count(n: int, noun: str, expected: str) -> None:
    assert count(n, noun) == expected


def test_plural_verbs() -> None:
    assert [plural("is", 1), plural("is", 2), plural("was", 1), plural("was", 0)] == [
        "is",
        "are",
        "was",
        "were",
    ]


def test_asking_for_more_steps_than_are_pending_says_so_in_good_english(
    session: Session, nb_path: Path
) -> None:
    session.propose.edit_cell("c1", "import os", reason="r")
    with pytest.raises(UsageMistake) as exc:
        session.approve(first=3)
    assert "there is only 1 pending step, not 3" in exc.value.said_to("magics")
    session.propose.edit_cell("c2", "x = 2", reason="r")
    with pytest.raises(UsageMistake) as exc:
        session.approve(first=3)
    assert "there are only 2 pending steps, not 3" in exc.value.said_to("magics")


LAZY_PLURAL = re.compile(
    r"\b(step|cell|file|checkpoint|item|edit|line|plan|rule|blob|command|change|error|output)\(s\)"
)


def test_no_step_s_left_in_messages() -> None:
    """The lazy "(s)" plural is gone from every message planbook prints."""
    root = Path(__file__).resolve().parent.parent / "planbook"
    offenders = [
        f"{path.relative_to(root)}:{n}"
        for path in root.rglob("*.py")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if LAZY_PLURAL.search(line) and path.name != "words.py"
    ]
    assert offenders == []
