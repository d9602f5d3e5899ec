"""Permission rules from pyproject.toml / planbook.toml: last match wins, clear errors."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from planbook.engine.rules import RulesError, RuleSet


def write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def test_no_files_means_no_opinion(tmp_path: Path) -> None:
    rules = RuleSet.load(tmp_path)
    assert rules.decide("shell", "ls") is None


def test_pyproject_compact_rules_last_match_wins(tmp_path: Path) -> None:
    write(
        tmp_path / "pyproject.toml",
        """
[project]
name = "x"

[tool.planbook.permissions]
write_file = "ask"
shell = { "*" = "ask", "git *" = "allow", "git push*" = "deny" }
"*_file" = { "secrets/*" = "deny" }
""",
    )
    rules = RuleSet.load(tmp_path)
    assert rules.decide("shell", "git status") == "allow"
    assert rules.decide("shell", "git push origin main") == "deny"
    assert rules.decide("shell", "make") == "ask"
    assert rules.decide("write_file", "notes.md") == "ask"
    assert rules.decide("write_file", "secrets/key.txt") == "deny"
    assert rules.decide("delete_file", "secrets/a") == "deny"
    assert rules.decide("insert_cell", "abc") is None


def test_planbook_toml_beats_pyproject(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.planbook.permissions]\nshell = "deny"\n')
    write(
        tmp_path / "planbook.toml", '[[rules]]\ntool = "shell"\npattern = "ls*"\naction = "allow"\n'
    )
    rules = RuleSet.load(tmp_path)
    assert rules.decide("shell", "ls -la") == "allow"
    assert rules.decide("shell", "rm x") == "deny"


def test_a_specific_pattern_does_not_match_a_call_without_target(tmp_path: Path) -> None:
    write(tmp_path / "planbook.toml", '[permissions]\nrun_cell = { "abc" = "allow" }\n')
    rules = RuleSet.load(tmp_path)
    assert rules.decide("run_cell", "abc") == "allow"
    assert rules.decide("run_cell", None) is None


def test_always_allow_is_persisted_to_planbook_toml(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.planbook.permissions]\nshell = "ask"\n')
    before = (tmp_path / "pyproject.toml").read_text()
    rules = RuleSet.load(tmp_path)
    rules.add("shell", "pytest*", "allow", persist=True)
    assert rules.decide("shell", "pytest -q") == "allow"
    assert (tmp_path / "pyproject.toml").read_text() == before  # never rewritten
    again = RuleSet.load(tmp_path)
    assert again.decide("shell", "pytest -q") == "allow"
    assert again.decide("shell", "make") == "ask"
    rules.add("shell", 'echo "q"', "deny", persist=True)
    parsed = tomllib.loads((tmp_path / "planbook.toml").read_text())
    assert [r["pattern"] for r in parsed["rules"]] == ["pytest*", 'echo "q"']


def test_add_without_persist_stays_in_memory(tmp_path: Path) -> None:
    rules = RuleSet.load(tmp_path)
    rules.add("edit_cell", "*", "allow")
    assert rules.decide("edit_cell", "x") == "allow"
    assert not (tmp_path / "planbook.toml").exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[permissions\nshell = 1", "planbook.toml: invalid TOML"),
        ('[permissions]\nshell = "yes"', "must be one of allow, ask, deny, not 'yes'"),
        ('[[rules]]\ntool = "shell"\naction = "allow"\nwho = "me"', "unknown key 'who'"),
        ('[[rules]]\ntool = "shell"', "missing 'action'"),
        ("rules = 3", "`rules` must be an array"),
        ("[permissions]\nshell = 3", "expected an action or a table"),
    ],
)
def test_bad_rule_files_give_one_clear_line(tmp_path: Path, text: str, expected: str) -> None:
    write(tmp_path / "planbook.toml", text)
    with pytest.raises(RulesError) as info:
        RuleSet.load(tmp_path)
    message = str(info.value)
    assert expected in message
    assert "\n" not in message


def test_appending_to_an_inline_rules_array_says_what_to_add(tmp_path: Path) -> None:
    write(tmp_path / "planbook.toml", 'rules = [{ tool = "shell", action = "ask" }]\n')
    rules = RuleSet.load(tmp_path)
    with pytest.raises(RulesError, match="add it by hand"):
        rules.add("shell", "ls", "allow", persist=True)
    assert RuleSet.load(tmp_path).decide("shell", "ls") == "ask"  # file untouched


def test_add_rejects_a_bad_action(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match="must be one of"):
        RuleSet.load(tmp_path).add("shell", "*", "sometimes")  # type: ignore[arg-type]


def test_install_makes_rules_the_session_hook(tmp_path: Path) -> None:
    import planbook
    from planbook.documents.memory import MemoryNotebook
    from planbook.engine.policy import PolicyDenied
    from planbook.engine.rules import install
    from planbook.workspace import Workspace

    write(tmp_path / "planbook.toml", '[permissions]\nshell = { "rm *" = "deny" }\n')
    session = planbook.Session(MemoryNotebook(), Workspace(tmp_path))
    with pytest.raises(PolicyDenied):
        session.propose.shell("rm -rf data", reason="x")
    assert session.propose.shell("ls", reason="x").status == "pending"
    session.extras["rules"].add("write_file", "*.txt", "deny")  # "always allow"-style, in session
    write(tmp_path / "planbook.toml", '[permissions]\nshell = { "ls*" = "deny" }\n')
    install(session)  # an agent run re-reads the files: edits count, session rules stay
    with pytest.raises(PolicyDenied):
        session.propose.shell("ls", reason="x")
    with pytest.raises(PolicyDenied):
        session.propose.write_file("a.txt", "x", reason="x")
