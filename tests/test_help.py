"""`%plan`'s verbs come from one table: the dispatch, `%plan?` and docs/magics-and-api.md say
the same verbs, and a mistake names the token and the closest verb or the usage."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from IPython.core.error import UsageError

from planbook.sessions.session import Session
from planbook.surfaces import plan_verbs
from planbook.surfaces.magics import PlanbookMagics
from planbook.surfaces.plan_verbs import VERBS

DOCS = Path(__file__).parent.parent / "docs" / "magics-and-api.md"


def test_plan_help_names_every_verb_with_its_arguments_and_help() -> None:
    doc = PlanbookMagics.plan.__doc__ or ""
    shown = [line.split("  ")[0] for line in doc.splitlines() if line.startswith("%plan")]
    assert shown == ["%plan", *(v.usage for v in VERBS), '%plan "task"']
    for verb in VERBS:
        assert re.search(rf"^{re.escape(verb.usage)} +{re.escape(verb.help)}$", doc, re.M)


def docs_verbs() -> list[tuple[str, str]]:
    """The rows of the docs' "Every `%plan` verb" table: (usage, what it does)."""
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Every `%plan` verb\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(%plan [^`]*)` \| (.*) \|$", section, re.M)
    return [(usage, what) for usage, what in rows]


def test_the_docs_list_exactly_the_verbs_of_the_table() -> None:
    assert docs_verbs() == [(v.usage, v.help) for v in VERBS]


def test_every_verb_is_its_own_word_and_dispatched_by_the_table() -> None:
    names = [v.name for v in VERBS]
    assert len(set(names)) == len(names) == 22
    assert {v.name: v for v in VERBS} == plan_verbs.VERBS_BY_NAME


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("shwo", "`shwo` is not a %plan command (did you mean `%plan show`?)"),
        ("histroy", "did you mean `%plan history`?"),
        ("bogus", "`bogus` is not a %plan command (verbs: show, text, on, off, revise,"),
        ("bogus", 'to ask the agent, quote the task: %plan "bogus"'),
        ("skip x", "`x` is not a step number: usage: `%plan skip N`"),
        ("skip", "`%plan skip` needs N: usage: `%plan skip N`"),
        ("skip 1 2", "`2` is more than `%plan skip` takes: usage: `%plan skip N`"),
        ("move 1 sideways 2", "`sideways` is neither before nor after: usage: `%plan move N"),
        ("diff 1", "`%plan diff` needs A B: usage: `%plan diff A B`"),
        ("show all", "`all` is more than `%plan show` takes: usage: `%plan show`"),
        ("rules drop 1", "`drop` is not `revoke`: usage: `%plan rules [revoke N]`"),
        ("rules revoke one", "`one` is not a rule number: usage: `%plan rules [revoke N]`"),
        ("gc many", "`many` is not a number of checkpoints to keep: usage: `%plan gc [K]`"),
        ("revise", 'say what should change: `%plan revise "use a bar chart"`'),
        ('revise "unclosed', 'cannot parse `revise "unclosed`'),
    ],
)
def test_a_mistake_is_one_line_naming_the_token(session: Session, line: str, message: str) -> None:
    before = session.store.state.model_dump()
    with pytest.raises(UsageError) as caught:
        plan_verbs.run(session, line)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert session.store.state.model_dump() == before


def test_verbs_still_do_what_they_did(session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    session.propose.edit_cell("c2", "x = 2", reason="two")
    session.propose.edit_cell("c3", "print(x)", reason="show")
    plan_verbs.run(session, "skip 2")
    assert capsys.readouterr().out == "step 2 is skipped\n"
    plan_verbs.run(session, "unskip 2")
    assert capsys.readouterr().out == "step 2 is pending\n"
    plan_verbs.run(session, "off")
    assert "planbook: mode act (changes apply at once" in capsys.readouterr().out
    plan_verbs.run(session, "on")
    assert "planbook: mode plan (changes are staged" in capsys.readouterr().out
    plan_verbs.run(session, "text")
    text = capsys.readouterr().out
    assert "x = 2" in text and "print(x)" in text
    plan_verbs.run(session, "cells")
    assert capsys.readouterr().out.startswith("#1 ")
    plan_verbs.run(session, 'revise "use y"')
    assert capsys.readouterr().out.startswith("revision 2 started from 1: use y")
    plan_verbs.run(session, "history")
    assert "use y" in capsys.readouterr().out


def docs_propose_options() -> list[tuple[str, str]]:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Every `%%propose` option\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(--[^`]*)` \| (.*) \|$", section, re.M)


def test_the_docs_list_exactly_the_options_of_propose() -> None:
    from planbook.surfaces.magics_propose import ProposeMagics

    parser = ProposeMagics.propose.parser  # what magic_arguments builds, and `%propose?` shows
    options = [
        (
            f"{a.option_strings[-1]} {a.metavar}".rstrip() if a.metavar else a.option_strings[-1],
            a.help,
        )
        for a in parser._actions
        if a.option_strings and a.option_strings[-1] != "--help"
    ]
    assert len(options) == 10
    assert docs_propose_options() == options
