"""Permission rules from pyproject.toml / planbook.toml: last match wins, clear errors."""

from __future__ import annotations

import contextlib
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planbook.engine.rules.matching import RuleSet, trust_file
from planbook.errors import PolicyDenied, RulesError


def write(path: Path, text: str) -> None:
    """The person's own rules file, trusted (a broken one has nothing to trust)."""
    path.write_text(text, encoding="utf-8")
    with contextlib.suppress(RulesError):
        trust_file(path)


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


def test_the_sessions_rules_follow_the_files_and_keep_session_rules(tmp_path: Path) -> None:
    import planbook
    from planbook.documents.memory import MemoryNotebook
    from planbook.workspace.files import Workspace

    write(tmp_path / "planbook.toml", '[permissions]\nshell = { "rm *" = "deny" }\n')
    session = planbook.Session(MemoryNotebook(), Workspace(tmp_path))
    with pytest.raises(PolicyDenied):
        session.propose.shell("rm -rf data", reason="x")
    assert session.propose.shell("ls", reason="x").status == "pending"
    session.rules.current().add("write_file", "*.txt", "deny")  # "always allow"-style, in session
    write(tmp_path / "planbook.toml", '[permissions]\nshell = { "ls*" = "deny" }\n')
    # The next change is judged by the file as it is now; the session's own rule stays.
    with pytest.raises(PolicyDenied):
        session.propose.shell("ls", reason="x")
    with pytest.raises(PolicyDenied):
        session.propose.write_file("a.txt", "x", reason="x")
    assert session.propose.shell("rm -rf data", reason="no longer denied").status == "pending"


def test_a_broken_rules_file_stages_everything_until_it_is_fixed(tmp_path: Path) -> None:
    from planbook.engine.rules.project import ProjectRules
    from planbook.model.operations import Shell, WriteFile

    write(tmp_path / "planbook.toml", '[permissions]\nshell = { "ls*" = "allow" }\n')
    rules = ProjectRules(tmp_path)
    assert rules.refresh() == []
    listing = Shell(command="ls -la")
    assert rules.verdict(listing) == "allow"
    rules.current().add("write_file", "notes.md", "deny")
    write(tmp_path / "planbook.toml", "[permissions\n")
    (warning,) = rules.refresh()
    assert "planbook.toml: invalid TOML" in warning and "every change is staged" in warning
    assert "\n" not in warning
    assert rules.verdict(listing) == "ask"  # fail closed: asked, so staged in every mode
    with pytest.raises(RulesError, match="invalid TOML"):
        rules.current()
    write(tmp_path / "planbook.toml", '[permissions]\nshell = { "ls*" = "deny" }\n')
    assert rules.refresh() == []
    assert rules.verdict(listing) == "deny"
    # The rule added in this session outlived the broken file.
    assert rules.verdict(WriteFile(path="notes.md", content="x")) == "deny"


def test_a_rules_file_changed_behind_its_own_times_is_read_again(tmp_path: Path) -> None:
    """The rules are read again only when a look at their files (stat) says they changed: an
    edit that keeps the file's size and puts its modification time back (``cp -p``, ``rsync
    -t``, a same-length edit in the same clock tick) must still be seen at the next change."""
    import os
    import time

    from planbook.engine.rules.project import ProjectRules
    from planbook.model.operations import Shell

    rules_file = tmp_path / "planbook.toml"
    listing = Shell(command="ls -la")
    rules = ProjectRules(tmp_path)
    assert rules.verdict(listing) is None  # no file: no opinion
    for turn in range(20):
        action = ("allow", "deny")[turn % 2]
        before = rules_file.stat() if rules_file.exists() else None
        # "allow" and "deny " are as long: the file keeps its size from one edit to the next
        quoted = f'"{action}"'
        write(rules_file, f'[permissions]\nshell = {{ "ls*" = {quoted:<7} }}\n')
        if before is not None:
            assert rules_file.stat().st_size == before.st_size
            os.utime(rules_file, ns=(before.st_atime_ns, before.st_mtime_ns))
        if turn % 4 < 2:  # past the coarse clock's tick: this look is certain (exact) and
            time.sleep(0.01)  # the next edit keeps the times it sees but the change time
        # else at once: the next edit may land in this look's tick (racy: read again)
        rules.refresh()
        assert rules.verdict(listing) == action, f"turn {turn}: the edit was not seen"
    rules_file.unlink()
    rules.refresh()
    assert rules.verdict(listing) is None  # the file removed: its rules with it


def test_protected_settings_are_asked_about_for_the_sessions_notebook(tmp_path: Path) -> None:
    from planbook.engine.rules.project import ProjectRules
    from planbook.model.operations import Shell

    write(tmp_path / "planbook.toml", '[permissions]\nshell = "allow"\n')
    rules = ProjectRules(tmp_path, tmp_path / "analysis.ipynb")
    assert rules.verdict(Shell(command="ls")) == "allow"
    assert rules.verdict(Shell(command="rm analysis.ipynb")) == "ask"
    assert rules.verdict(Shell(command="echo x > planbook.toml")) == "ask"


# --- shell commands are matched on what the shell will run -------------------------------------

SHELL_RULES = (
    '[permissions]\nshell = { "rm *" = "deny", "ls*" = "allow", "git status*" = "allow" }\n'
)


@pytest.mark.parametrize(
    "command",
    [
        " rm -f keep.txt",  # leading space
        "\trm -f keep.txt",
        "true && rm -f b.txt",
        "ls; rm x",
        "ls || rm x",
        "ls | rm x",
        "echo $(rm x)",
        "echo `rm x`",
        'echo "$(rm x)"',
        "(rm x)",
        "{ rm x; }",
        "r\\\nm x",  # sh joins the continuation into `rm`
        "ls \\\n&& rm x",
        "'rm' x",
        "r''m x",
        "\\rm x",
        "sudo rm x",
        "env -i FOO=1 rm x",
        "nice -n 5 rm x",
        "timeout 5 rm x",
        "xargs rm",
        "xargs -I{} rm {}",
        "find . -exec rm {} +",
        "sh -c 'rm x'",
        'bash -c "ls && rm x"',
        "eval 'rm x'",
        "if true; then rm x; fi",
        "for f in a; do rm $f; done",
        "cat <<EOF\n$(rm x)\nEOF",
        "FOO=1 rm x",
    ],
)
def test_a_deny_on_any_part_denies_the_whole(tmp_path: Path, command: str) -> None:
    write(tmp_path / "planbook.toml", SHELL_RULES)
    assert RuleSet.load(tmp_path).decide("shell", command) == "deny"


@pytest.mark.parametrize(
    "command", ["ls |", "echo 'unbalanced", "ls \\", "ls && ", "$(", "ls\x00", "ls\r rm x"]
)
def test_what_cannot_be_parsed_is_asked_never_allowed(tmp_path: Path, command: str) -> None:
    write(tmp_path / "planbook.toml", '[permissions]\nshell = { "*" = "allow" }\n')
    assert RuleSet.load(tmp_path).decide("shell", command) == "ask"


def test_allowed_only_when_every_part_is(tmp_path: Path) -> None:
    write(tmp_path / "planbook.toml", SHELL_RULES)
    rules = RuleSet.load(tmp_path)
    assert rules.decide("shell", "ls -la") == "allow"
    assert rules.decide("shell", "  ls -la") == "allow"
    assert rules.decide("shell", "git status && ls") == "allow"
    assert rules.decide("shell", "command ls") == "allow"  # changes nothing about what runs
    # A part no rule speaks for leaves it to the mode; a wrapper that changes what a command
    # may do must itself be allowed.
    assert rules.decide("shell", "ls && make") is None
    assert rules.decide("shell", "git status; cat x") is None
    assert rules.decide("shell", "sudo ls") is None
    assert rules.decide("shell", "PAGER=sh ls") is None
    assert rules.decide("shell", "$CMD x") == "ask"  # only the shell knows what runs
    # A value only the shell knows could name a protected path: asked, never allowed.
    assert rules.decide("shell", "ls $(make)") == "ask"
    assert rules.decide("shell", "ls $HOME") == "ask"
    # Quoted separators stay arguments: `echo` with words, nothing denied.
    assert rules.decide("shell", "echo 'a; rm -rf /'") is None


def test_a_whole_command_pattern_still_denies(tmp_path: Path) -> None:
    write(tmp_path / "planbook.toml", '[permissions]\nshell = { "*--force*" = "deny" }\n')
    rules = RuleSet.load(tmp_path)
    assert rules.decide("shell", "ls && git push --force") == "deny"
    assert rules.decide("shell", "git push") is None


_part = st.sampled_from(["ls", "git status", "cat a.txt", "echo hi", "true", "make"])
_join = st.sampled_from([" | ", " && ", " || ", "; ", "\n", " & "])
_wrap = st.sampled_from(
    ["{}", " {}", "({})", "$({})", "`{}`", "echo $({})", "sudo {}", "env A=1 {}"]
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_part, max_size=3), st.integers(min_value=0, max_value=3), _join, _wrap, st.data())
def test_a_denied_command_anywhere_denies_the_whole(
    tmp_path_factory: pytest.TempPathFactory,
    parts: list[str],
    where: int,
    joiner: str,
    wrap: str,
    data: st.DataObject,
) -> None:
    root = tmp_path_factory.mktemp("rules")
    write(root / "planbook.toml", SHELL_RULES)
    denied = "rm -f keep.txt"
    # sh joins a backslash-newline anywhere in a word: so does the rule matcher.
    cut = data.draw(st.integers(min_value=0, max_value=len(denied)))
    if cut and data.draw(st.booleans()):
        denied = denied[:cut] + "\\\n" + denied[cut:]
    parts = [*parts]
    parts.insert(min(where, len(parts)), wrap.format(denied))
    command = joiner.join(parts)
    assert RuleSet.load(root).decide("shell", command) == "deny", command
