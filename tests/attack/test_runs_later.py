"""Auto-edit mode applies edits at once; a write that runs code later waits for review.

Each attack is a real session on a real notebook file in a temporary workspace, in auto-edit
mode, writing one file through the Python API (what the agent's write tools and MCP call): the
step must stay pending, the file must not exist, and the step's review text must say why. The
same writes in plan mode are staged as always; act mode applies them and says so; an ordinary
source (conftest.py) applies; a glob added in planbook.toml is held.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from planbook.documents.file import FileNotebook
from planbook.engine.rules.runs_later import FAMILIES, path_reason
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace
from tests.conftest import make_notebook

#: (family, path to write, what the review must name). Each line is one attempt.
ATTACKS: list[tuple[str, str, str]] = [
    # modules that shadow an importable one for a kernel started in the folder
    ("module", "ipykernel_launcher.py", "ipykernel_launcher"),
    ("module", "planbook/__init__.py", "planbook"),
    ("module", "IPython/__init__.py", "IPython"),
    ("module", "json.py", "json"),
    ("module", "./os.py", "os"),
    ("module", "jupyter_client/__init__.py", "jupyter_client"),
    ("module", "sub/../pathlib.py", "pathlib"),
    # git: a repository planted anywhere, its settings and what they name
    ("git", ".git/config", "git"),
    ("git", "a/../.git/hooks/pre-commit", "git"),
    ("git", ".GIT/config", "git"),
    ("git", "vendor/lib/.git/config", "git"),
    ("git", "planted/HEAD", "git"),
    ("git", "planted/head", "git"),
    ("git", ".gitattributes", "git"),
    ("git", "data/.gitattributes", "git"),
    ("git", ".gitmodules", "git"),
    # interpreter, IPython and Jupyter start-up files
    ("start-up", ".venv/lib/python3.11/site-packages/evil.pth", "start-up"),
    ("start-up", "x.pth", "start-up"),
    ("start-up", "sitecustomize.py", "start-up"),
    ("start-up", "lib/usercustomize.py", "start-up"),
    ("start-up", ".ipython/profile_default/startup/00-x.py", "start-up"),
    ("start-up", "ipy/profile_default/startup/00-x.py", "start-up"),
    ("start-up", "ipython_config.py", "start-up"),
    ("start-up", "ipython_kernel_config.py", "start-up"),
    ("start-up", "jupyter_server_config.py", "start-up"),
    ("start-up", "jupyter_notebook_config.json", "start-up"),
    ("start-up", ".jupyter/custom/custom.js", "start-up"),
    ("start-up", "__pycache__/helpers.cpython-311.pyc", "start-up"),
    ("start-up", "share/jupyter/kernels/evil/kernel.json", "start-up"),
    # editors and shell tools
    ("editor", ".vscode/tasks.json", "editor"),
    ("editor", ".VSCode/settings.json", "editor"),
    ("editor", ".idea/workspace.xml", "editor"),
    ("editor", ".envrc", "editor"),
    ("editor", ".pre-commit-config.yaml", "editor"),
    ("editor", ".python-version", "editor"),
    ("editor", "project.code-workspace", "editor"),
    ("editor", ".devcontainer/devcontainer.json", "editor"),
]

ORDINARY = ["conftest.py", "Makefile", "setup.py", "src/app/helpers.py", "analysis.py", "notes.md"]


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    make_notebook(root / "nb.ipynb", ["x = 1"])
    return root / "nb.ipynb"


def _session(nb: Path, mode: str) -> Session:
    session = Session(FileNotebook(nb), Workspace(nb.parent, protected=(nb,)), notebook_path=nb)
    session.set_mode(mode)
    return session


def _written(root: Path, path: str) -> bool:
    return os.path.lexists(os.path.normpath(root / path))


@pytest.mark.parametrize(("family", "path", "named"), ATTACKS)
def test_auto_edit_holds_a_write_that_runs_code_later(
    tmp_path: Path, family: str, path: str, named: str
) -> None:
    nb = _workspace(tmp_path)
    session = _session(nb, "auto-edit")
    step = session.propose.write_file(path, "import os\n", reason="helper")
    assert step.status == "pending", f"{family}: {path} applied in auto-edit mode"
    assert not _written(nb.parent, path), f"{family}: {path} exists on disk"
    assert step.risk == "high"
    assert step.runs_later is not None
    text = session.render_text()
    assert "runs code later:" in text
    why = next(line for line in text.splitlines() if "runs code later:" in line)
    family_words = {f.name: f.why for f in FAMILIES}
    if family == "module":
        assert f"`{named}`" in why, why
    elif family in family_words:
        assert any(w in why for w in (family_words[family], "git directory", "git's config")), why
    # Nothing else happened: no plan step applied, no other file written.
    assert sorted(p.name for p in nb.parent.iterdir()) == ["nb.ipynb"]


@pytest.mark.parametrize(("family", "path", "named"), ATTACKS[:3] + ATTACKS[7:9] + ATTACKS[-3:])
def test_plan_mode_stages_the_same_writes_as_before(
    tmp_path: Path, family: str, path: str, named: str
) -> None:
    nb = _workspace(tmp_path)
    session = _session(nb, "plan")
    step = session.propose.write_file(path, "x = 1\n", reason="r")
    assert step.status == "pending" and not _written(nb.parent, path)


def test_act_mode_applies_it_and_the_record_says_what_it_runs(tmp_path: Path) -> None:
    nb = _workspace(tmp_path)
    session = _session(nb, "act")
    step = session.propose.write_file(".vscode/tasks.json", "{}\n", reason="tasks")
    assert step.status == "done"
    assert (nb.parent / ".vscode" / "tasks.json").read_text() == "{}\n"
    assert "runs code later: .vscode/tasks.json: an editor" in session.render_text()


def test_protected_settings_stay_reviewed_in_act_mode_too(tmp_path: Path) -> None:
    nb = _workspace(tmp_path)
    session = _session(nb, "act")
    step = session.propose.write_file(".git/config", "[core]\n", reason="r")
    assert step.status == "pending" and not (nb.parent / ".git").exists()


@pytest.mark.parametrize("path", ORDINARY)
def test_ordinary_project_sources_apply_in_auto_edit(tmp_path: Path, path: str) -> None:
    nb = _workspace(tmp_path)
    session = _session(nb, "auto-edit")
    step = session.propose.write_file(path, "x = 1\n", reason="r")
    assert step.status == "done" and (nb.parent / path).read_text() == "x = 1\n"
    assert step.runs_later is None


def test_an_allow_rule_does_not_apply_it(tmp_path: Path) -> None:
    nb = _workspace(tmp_path)
    (nb.parent / "planbook.toml").write_text('[permissions]\nwrite_file = "allow"\n')
    session = _session(nb, "auto-edit")
    step = session.propose.write_file("sitecustomize.py", "x = 1\n", reason="r")
    assert step.status == "pending" and not (nb.parent / "sitecustomize.py").exists()


def test_a_path_added_in_planbook_toml_is_held(tmp_path: Path) -> None:
    nb = _workspace(tmp_path)
    (nb.parent / "planbook.toml").write_text('runs_later = ["tools/*.sh"]\n')
    session = _session(nb, "auto-edit")
    held = session.propose.write_file("tools/deploy.sh", "rm -rf /\n", reason="r")
    assert held.status == "pending" and not (nb.parent / "tools").exists()
    assert "runs_later in planbook.toml" in (held.runs_later or "")
    other = session.propose.write_file("tools/readme.txt", "hi\n", reason="r")
    assert other.status == "done"


def test_a_bad_runs_later_value_fails_closed_in_one_line(tmp_path: Path) -> None:
    nb = _workspace(tmp_path)
    (nb.parent / "planbook.toml").write_text('runs_later = "tools/*.sh"\n')
    session = _session(nb, "auto-edit")
    warnings = session.rules.refresh()
    assert len(warnings) == 1 and "runs_later` must be a list" in warnings[0]
    step = session.propose.write_file("plain.txt", "x\n", reason="r")
    assert step.status == "pending"  # every change is asked about until the file is fixed


def test_a_symlinked_folder_that_leads_into_git_is_held(tmp_path: Path) -> None:
    nb = _workspace(tmp_path)
    root = nb.parent
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "tools").symlink_to(root / ".git" / "hooks")
    session = _session(nb, "auto-edit")
    step = session.propose.write_file("tools/pre-commit", "#!/bin/sh\n", reason="r")
    assert step.status == "pending" and not (root / ".git" / "hooks" / "pre-commit").exists()


def test_a_planted_bare_repository_is_held_file_by_file(tmp_path: Path) -> None:
    nb = _workspace(tmp_path)
    root = nb.parent
    bare = root / "cache"
    (bare / "objects").mkdir(parents=True)
    (bare / "refs").mkdir()
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    session = _session(nb, "auto-edit")
    step = session.propose.write_file(
        "cache/config", "[core]\n\tfsmonitor = touch pwned\n", reason="r"
    )
    assert step.status == "pending" and not (bare / "config").exists()
    assert "cache/, a git directory" in (step.runs_later or "")


def test_the_hooks_path_and_included_config_are_held(tmp_path: Path) -> None:
    nb = _workspace(tmp_path)
    root = nb.parent
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(
        "[core]\n\thooksPath = githooks\n[include]\n\tpath = ../team.gitconfig\n"
        '[includeIf "gitdir:~/"]\n\tpath = "../more.gitconfig" ; a comment\n'
    )
    session = _session(nb, "auto-edit")
    for path, words in (
        ("githooks/pre-commit", "core.hooksPath"),
        ("team.gitconfig", "includes"),
        ("more.gitconfig", "includes"),
    ):
        step = session.propose.write_file(path, "x\n", reason="r")
        assert step.status == "pending" and not (root / path).exists(), path
        assert words in (step.runs_later or ""), step.runs_later


def test_an_in_project_environment_is_held(tmp_path: Path) -> None:
    nb = _workspace(tmp_path)
    root = nb.parent
    (root / "env" / "bin").mkdir(parents=True)
    (root / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    session = _session(nb, "auto-edit")
    step = session.propose.write_file("env/bin/activate", "echo hi\n", reason="r")
    assert step.status == "pending" and "Python environment" in (step.runs_later or "")


@pytest.mark.skipif(importlib.util.find_spec("numpy") is None, reason="numpy is not installed")
def test_numpy_py_beside_a_notebook_in_a_subfolder_is_held(tmp_path: Path) -> None:
    nb = _workspace(tmp_path)
    (nb.parent / "reports").mkdir()
    make_notebook(nb.parent / "reports" / "r.ipynb", ["y = 2"])  # a kernel starts there too
    session = _session(nb, "auto-edit")
    for path in ("numpy.py", "reports/numpy.py", "NumPy/__init__.py"):
        step = session.propose.write_file(path, "x = 1\n", reason="r")
        assert step.status == "pending" and not _written(nb.parent, path), path
    # A module of that name deep inside a package is no shadow: the package imports it as
    # pkg.numpy, a kernel never starts there.
    deep = session.propose.write_file("src/pkg/numpy.py", "x = 1\n", reason="r")
    assert deep.status == "done"


def test_the_project_own_modules_stay_editable(tmp_path: Path) -> None:
    nb = _workspace(tmp_path)
    (nb.parent / "helpers.py").write_text("x = 1\n")
    session = _session(nb, "auto-edit")
    step = session.propose.edit_file(
        "helpers.py", [{"search": "x = 1", "replace": "x = 2"}], reason="r"
    )
    assert step.status == "done" and (nb.parent / "helpers.py").read_text() == "x = 2\n"


def test_the_matcher_never_reaches_outside_the_workspace(tmp_path: Path) -> None:
    # `..` out of the workspace is refused by the workspace itself; the matcher answers None
    # rather than guess about a path it cannot place.
    assert path_reason("../outside.py", tmp_path) is None


@pytest.mark.anyio
async def test_plan_continue_in_auto_edit_does_not_write_it_on_a_recorded_answer(
    tmp_path: Path,
) -> None:
    """A received notebook: its conversation holds the write tool call and an "approve" that
    someone else recorded. `%plan continue` (continue_task, what the magic calls) in auto-edit
    mode stages the write for review; the module never lands beside the notebook."""
    from planbook.agent import memory
    from planbook.agent.decisions import Answer
    from planbook.agent.run import continue_task, plan_task, stop_run
    from planbook.agents import Scripted
    from tests.agent.conftest import next_decision

    nb = _workspace(tmp_path)
    script = Scripted(
        [("write_file", {"path": "planbook/__init__.py", "content": "import os\n", "reason": "x"})]
    )
    sender = _session(nb, "ask")
    run = plan_task(sender, "helper", model=script)
    decision = await next_decision(sender)
    # The notebook as it travels: the question open in its conversation, answered "approve"
    # by the sender, opened by someone else in auto-edit mode.
    received = _session(nb, "auto-edit")
    memory.answer_saved(received, decision.id, Answer(choice="approve"))
    stop_run(sender)
    await run
    resumed = continue_task(received, model=script)
    await resumed
    assert resumed.status == "finished", resumed.error
    assert not (nb.parent / "planbook").exists()
    plan = received.current_plan()
    assert plan is not None
    [step] = plan.steps
    assert step.status == "pending" and "`planbook`" in (step.runs_later or "")
