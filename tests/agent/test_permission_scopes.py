"""Permissions people can read: "always allow" offers scopes, lands in planbook.toml with the
file's comments kept, is listed by `%plan rules` and revocable there; it never lets a change skip
the plan in plan mode, nor reach planbook's own settings without review."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import planbook
from planbook.agent.context import decisions_of
from planbook.agent.run import plan_task
from planbook.agents import Scripted
from planbook.engine.rules.file import append_rule, scopes_for
from planbook.engine.rules.rule import Rule
from planbook.errors import RulesError, UsageMistake
from planbook.surfaces.magics_agent import revoke_rule, rules_text
from tests.agent.conftest import next_decision

pytestmark = pytest.mark.anyio

OWN = """# Rules for this project. Keep the shell strict.
[permissions]
shell = { "rm *" = "deny" }  # never
"""


def write(path: str, content: str = "x\n") -> tuple[str, dict[str, str]]:
    return ("write_file", {"path": path, "content": content, "reason": "save"})


def test_scopes_offered_for_files_commands_and_protected_targets() -> None:
    labels = [s.label for s in scopes_for("write_file", "data/b.txt")]
    assert labels == [
        "this file (data/b.txt)",
        "this folder (data/*)",
        "this tool (write_file, anywhere)",
    ]
    shell = scopes_for("shell", "git diff --stat HEAD")
    assert [(s.label, s.pattern) for s in shell] == [
        ("this command (git diff --stat HEAD)", "git diff --stat HEAD"),
        ("commands starting with `git diff`", "git diff*"),
    ]
    assert [s.pattern for s in scopes_for("shell", "ls")] == ["ls"]
    assert scopes_for("write_file", "planbook.toml") == []
    assert scopes_for("edit_file", ".git/config") == []
    assert scopes_for("write_file", "nb.ipynb", protected=("nb.ipynb",)) == []


def test_no_rule_may_allow_protected_settings(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match="always reviewed"):
        append_rule(tmp_path, Rule(tool="write_file", pattern="pyproject.toml", action="allow"))
    assert not (tmp_path / "planbook.toml").exists()


async def test_a_folder_scope_is_written_with_comments_kept_and_can_be_revoked(
    session: planbook.Session, tmp_path: Path
) -> None:
    (tmp_path / "planbook.toml").write_text(OWN)
    session.set_mode("ask")
    script = Scripted([write("data/b.txt"), write("data/c.txt"), write("notes2.txt")])
    run = plan_task(session, "save", model=script)
    first = await next_decision(session)
    assert "always allow this folder (data/*)" in first.options
    assert first.data["scopes"][1]["pattern"] == "data/*"
    decisions_of(session).answer(first.id, "always allow this folder (data/*)")
    other = await next_decision(session)  # data/c.txt did not ask; notes2.txt does
    assert other.data["target"] == "notes2.txt"
    decisions_of(session).answer(other.id, "approve")
    await run
    assert (tmp_path / "data" / "c.txt").exists()

    text = (tmp_path / "planbook.toml").read_text()
    assert text.startswith(OWN)  # the person's file, comments and all, untouched
    assert "# always allow this folder (data/*): chosen by you" in text
    assert tomllib.loads(text)["rules"] == [
        {"tool": "write_file", "pattern": "data/*", "action": "allow"}
    ]
    listed = rules_text(session)
    assert "1. deny  shell rm *   (planbook.toml permissions.shell)" in listed
    assert "2. allow write_file data/*   (planbook.toml rule 1)" in listed
    assert listed.count("data/*") == 1

    assert "revoked rule 2" in revoke_rule(session, 2)
    after = (tmp_path / "planbook.toml").read_text()
    assert after.startswith(OWN) and "data/*" not in after
    assert "data/*" not in rules_text(session)
    with pytest.raises(UsageMistake, match="there is no rule 5"):
        revoke_rule(session, 5)

    # revoked: the next write to data/ asks again
    run = plan_task(session, "again", model=Scripted([write("data/d.txt")]))
    again = await next_decision(session)
    assert again.data["target"] == "data/d.txt"
    decisions_of(session).answer(again.id, "deny")
    await run


async def test_rules_in_pyproject_are_listed_but_revoked_by_hand(
    session: planbook.Session, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.planbook.permissions]\nshell = "ask"\n')
    assert "1. ask   shell *" in rules_text(session)
    from planbook.agent.permissions import rule_views

    [view] = rule_views(session)  # what the panel shows: this one cannot be revoked there
    assert (view.number, view.action, view.revocable) == (1, "ask", False)
    from planbook.errors import PlanbookError

    with pytest.raises(PlanbookError, match=r"edit pyproject\.toml"):
        revoke_rule(session, 1)


async def test_an_allow_rule_never_skips_the_plan_in_plan_mode(
    session: planbook.Session, tmp_path: Path
) -> None:
    (tmp_path / "planbook.toml").write_text('[[rules]]\ntool = "*"\naction = "allow"\n')
    run = await plan_task(session, "save", model=Scripted([write("out.txt")]))
    assert run.status == "finished", run.error
    assert not (tmp_path / "out.txt").exists()
    assert [s.status for s in session.current_plan().steps] == ["pending"]  # type: ignore[union-attr]


async def test_protected_settings_are_asked_about_whatever_the_rules(
    session: planbook.Session, tmp_path: Path
) -> None:
    (tmp_path / "planbook.toml").write_text('[[rules]]\ntool = "write_file"\naction = "allow"\n')
    before = (tmp_path / "planbook.toml").read_text()
    session.set_mode("ask")
    run = plan_task(session, "x", model=Scripted([write("planbook.toml", "[permissions]\n")]))
    decision = await next_decision(session)
    assert decision.data["target"] == "planbook.toml"
    assert not any(o.startswith("always allow") for o in decision.options)
    decisions_of(session).answer(decision.id, "deny", text="not that file")
    await run
    assert (tmp_path / "planbook.toml").read_text() == before
