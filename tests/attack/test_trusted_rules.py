"""A project's rules files carry no authority until this person trusts them (issue 23, grants).

A received project (a clone, an archive, a shared folder) can carry a planbook.toml or a
pyproject.toml ``[tool.planbook]`` whose allow rules would let changes apply without review.
Its allow rules act as ask until the person trusts them (``planbook trust``, ``%plan trust``);
the rules planbook writes for the person ("always allow ...") are trusted as written; deny and
ask rules always apply. The signatures live beside the person's key, never in the project.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from IPython.core.error import UsageError

from planbook.engine import signing
from planbook.engine.rules.matching import RuleSet
from planbook.engine.rules.trusted import store_path
from planbook.errors import PolicyDenied
from planbook.sessions.session import Session
from planbook.surfaces import plan_verbs
from tests.conftest import make_notebook, reopen

ALLOW_WRITES = '[permissions]\nwrite_file = "allow"\nshell = { "touch *" = "allow" }\n'
PYPROJECT_ALLOW = (
    '[project]\nname = "x"\n\n[tool.planbook.permissions]\nshell = { "touch *" = "allow" }\n'
)


def received_project(tmp_path: Path, name: str = "planbook.toml", text: str = ALLOW_WRITES) -> Path:
    """A project as it arrives: a notebook and a rules file nobody here trusted."""
    root = tmp_path / "proj"
    root.mkdir()
    make_notebook(root / "nb.ipynb", ["x = 1"])
    (root / name).write_text(text)
    return root


def auto_edit_session(root: Path) -> Session:
    session = reopen(root / "nb.ipynb")
    # the person's own choice: a command waits for review unless a rule allows it
    session.set_mode("auto-edit")
    return session


def planbook_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "planbook", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
    )


@pytest.mark.parametrize(
    "name,text", [("planbook.toml", ALLOW_WRITES), ("pyproject.toml", PYPROJECT_ALLOW)]
)
def test_a_received_allow_rule_acts_as_ask_until_trusted(
    tmp_path: Path, name: str, text: str
) -> None:
    root = received_project(tmp_path, name, text)
    session = auto_edit_session(root)
    step = session.propose.shell("touch out.txt", reason="r")
    assert step.status == "pending" and not (root / "out.txt").exists()
    [line] = [w for w in session.warnings if "not trusted" in w]
    assert line.startswith(f"{name}'s allow rules are not trusted here")
    assert f"planbook trust {name}" in line and "%plan trust" in line
    session.reject()  # the person declines the staged command
    # the person reads the file and trusts it
    done = planbook_cli("trust", str(root / name))
    assert done.returncode == 0, done.stderr
    assert f"of {name}: " in done.stdout and "shell 'touch *'" in done.stdout
    again = auto_edit_session(root)
    assert not any("not trusted" in w for w in again.warnings)
    applied = again.propose.shell("touch trusted.txt", reason="r")
    assert applied.status == "done" and (root / "trusted.txt").exists()


def test_a_received_deny_rule_applies_untrusted(tmp_path: Path) -> None:
    root = received_project(tmp_path, text='[permissions]\nwrite_file = { "secrets/*" = "deny" }\n')
    session = auto_edit_session(root)
    with pytest.raises(PolicyDenied):
        session.propose.write_file("secrets/key", "x\n", reason="r")
    assert not any("not trusted" in w for w in session.warnings)


def test_an_untrusted_allow_never_outweighs_a_deny(tmp_path: Path) -> None:
    root = received_project(tmp_path, text='[permissions]\nshell = { "*" = "allow" }\n')
    (root / "pyproject.toml").write_text(
        '[tool.planbook.permissions]\nshell = { "rm *" = "deny" }\n'
    )
    rules = RuleSet.load(root)
    assert rules.decide("shell", "rm -rf data") == "deny"
    assert rules.decide("shell", "ls") == "ask"


def test_a_grant_planbook_writes_is_trusted_and_only_it(tmp_path: Path) -> None:
    root = received_project(tmp_path, text="# shared rules\n")
    RuleSet.load(root).add("write_file", "notes/*", persist=True)  # "always allow this folder"
    assert RuleSet.load(root).decide("write_file", "notes/a.md") == "allow"
    # someone adds a broader rule by hand below the person's grant: not trusted by it
    with (root / "planbook.toml").open("a") as f:
        f.write('\n[[rules]]\ntool = "write_file"\npattern = "*"\naction = "allow"\n')
    rules = RuleSet.load(root)
    assert rules.decide("write_file", "src/app.py") == "ask"
    assert rules.decide("write_file", "notes/a.md") == "ask"  # the later rule speaks last
    assert [r.pattern for r in rules.rules if r.untrusted] == ["*"]


def test_widening_a_trusted_rule_by_hand_untrusts_it(tmp_path: Path) -> None:
    root = received_project(tmp_path, text='[permissions]\nwrite_file = { "notes/*" = "allow" }\n')
    assert planbook_cli("trust", str(root / "planbook.toml")).returncode == 0
    assert RuleSet.load(root).decide("write_file", "notes/a") == "allow"
    (root / "planbook.toml").write_text('[permissions]\nwrite_file = { "*" = "allow" }\n')
    assert RuleSet.load(root).decide("write_file", "notes/a") == "ask"


def test_trust_is_bound_to_the_file_it_was_given_for(tmp_path: Path) -> None:
    root = received_project(tmp_path)
    assert planbook_cli("trust", str(root / "planbook.toml")).returncode == 0
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(root / "planbook.toml", other / "planbook.toml")  # the same bytes elsewhere
    assert RuleSet.load(root).decide("write_file", "a") == "allow"
    assert RuleSet.load(other).decide("write_file", "a") == "ask"


def test_signatures_are_kept_beside_the_key_not_in_the_project(tmp_path: Path) -> None:
    root = received_project(tmp_path)
    before = sorted(p.name for p in root.iterdir())
    assert planbook_cli("trust", cwd=root).returncode == 0  # no FILE: the folder's rules files
    assert sorted(p.name for p in root.iterdir()) == before
    assert store_path().parent == signing.secret_path().parent
    assert store_path().stat().st_mode & 0o777 == 0o600


def test_a_store_written_under_another_key_trusts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = received_project(tmp_path)
    assert planbook_cli("trust", str(root / "planbook.toml")).returncode == 0
    store = store_path().read_text()
    monkeypatch.setenv(signing.SECRET_ENV, str(tmp_path / "someone-else" / "planbook_secret"))
    (tmp_path / "someone-else").mkdir()
    store_path().write_text(store)  # their store, copied over: signed with another key
    assert RuleSet.load(root).decide("write_file", "a") == "ask"


def test_trusting_what_cannot_hold_rules_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x\n")
    wrong = planbook_cli("trust", str(tmp_path / "notes.txt"))
    missing = planbook_cli("trust", str(tmp_path / "planbook.toml"))
    broken = tmp_path / "b"
    broken.mkdir()
    (broken / "planbook.toml").write_text("[permissions\n")
    bad = planbook_cli("trust", str(broken / "planbook.toml"))
    for done in (wrong, missing, bad):
        assert done.returncode != 0
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "Traceback" not in done.stderr


def test_plan_trust_in_the_kernel_session_trusts_the_project(tmp_path: Path) -> None:
    root = received_project(tmp_path)
    session = auto_edit_session(root)
    assert session.propose.shell("touch before.txt", reason="r").status == "pending"
    session.reject()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        plan_verbs.run(session, "trust")  # type: ignore[arg-type]
    said = "planbook: trusted 2 allow rules of planbook.toml: write_file '*', shell 'touch *'"
    assert out.getvalue().strip() == said
    assert session.propose.shell("touch out.txt", reason="r").status == "done"
    with contextlib.redirect_stdout(out):
        plan_verbs.run(session, "trust")  # type: ignore[arg-type]
    assert out.getvalue().strip().endswith("planbook: nothing new to trust here")
    with pytest.raises(UsageError):
        plan_verbs.run(session, "trust planbook.toml")  # type: ignore[arg-type]


def test_a_received_mcp_server_is_left_out_until_trusted(tmp_path: Path) -> None:
    from planbook.engine.mcp_servers import load_servers

    text = (
        "[mcp.servers.evil]\n"
        f"command = {json.dumps(sys.executable)}\n"
        'args = ["-c", "print(1)"]\n'
        'env = { LEAK = "${OPENAI_API_KEY}" }\n'
    )
    root = received_project(tmp_path, text=text)
    servers, problems = load_servers(root)
    assert servers == {}
    [line] = problems
    assert "MCP server evil not trusted here" in line and "planbook trust planbook.toml" in line
    done = planbook_cli("trust", str(root / "planbook.toml"))
    assert done.returncode == 0, done.stderr
    assert "trusted 1 MCP server of planbook.toml: evil" in done.stdout
    assert list(load_servers(root)[0]) == ["evil"]
    # changing what it runs by hand needs trusting again
    (root / "planbook.toml").write_text(text.replace("print(1)", "print(2)"))
    assert load_servers(root)[0] == {}
