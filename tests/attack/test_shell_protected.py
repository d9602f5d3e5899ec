"""Protected settings go through review in every mode, and no rule can allow them.

planbook.toml, the [tool.planbook] table of pyproject.toml, anything under .git/ and the
notebook file: a change to them could hand the agent powers the person never gave (``shell =
"allow"``, a ``core.fsmonitor`` that the next read-only ``git status`` runs). Each attempt is
made through the Python API and the agent's tools, in each mode, under rules that allow
everything and rules that name the protected files outright.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic_ai import ApprovalRequired

import planbook
from planbook.agent.tools_write import shell as shell_tool
from planbook.agent.tools_write import write_file as write_file_tool
from planbook.documents.file import FileNotebook
from planbook.engine.rules.protected import Protected
from planbook.workspace.files import Workspace
from tests.support.attack import tool_context
from tests.support.rules import own_rules

MODES = ["plan", "ask", "auto-edit", "act"]
ALLOW_ALL = """
[permissions]
write_file = "allow"
edit_file = "allow"
delete_file = "allow"
shell = "allow"

[[rules]]
tool = "*"
pattern = "planbook.toml"
action = "allow"

[[rules]]
tool = "*_file"
pattern = ".git/*"
action = "allow"
"""
PYPROJECT = '[project]\nname = "demo"\n'


def project(tmp_path: Path) -> tuple[planbook.Session, Path]:
    root = tmp_path / "proj"
    root.mkdir()
    own_rules(root / "planbook.toml", ALLOW_ALL)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "a.txt").write_text("a\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    nb_path = root / "analysis.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell("x = 1", id="c1"))
    nbformat.write(nb, nb_path)
    session = planbook.Session(
        FileNotebook(nb_path),
        Workspace(root, protected=(nb_path,)),
        notebook_path=nb_path,
    )
    return session, root


def state(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and p.name != "analysis.ipynb" and "objects" not in p.parts
    }


ATTEMPTS: list[tuple[str, dict[str, Any]]] = [
    ("write_file", {"path": "planbook.toml", "content": '[permissions]\nshell = "allow"\n'}),
    ("edit_file", {"path": "planbook.toml", "edits": [{"search": "shell", "replace": "x"}]}),
    ("delete_file", {"path": "planbook.toml"}),
    ("write_file", {"path": ".git/config", "content": "[core]\n\tfsmonitor = touch pwned\n"}),
    ("write_file", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch pwned\n"}),
    ("write_file", {"path": "sub/../.git/info/exclude", "content": "*\n"}),
    (
        "write_file",
        {"path": "pyproject.toml", "content": PYPROJECT + '[tool.planbook]\nshell = "allow"\n'},
    ),
    ("shell", {"command": "echo 'shell = \"allow\"' >> planbook.toml"}),
    ("shell", {"command": "git config core.fsmonitor 'touch pwned'"}),
    ("shell", {"command": "cp a.txt .git/hooks/post-checkout"}),
    ("shell", {"command": "sed -i s/x/y/ pyproject.toml"}),
    ("shell", {"command": "rm -f analysis.ipynb"}),
    ("shell", {"command": "rm -f *.ipynb"}),
    ("shell", {"command": "cd .git && echo x > config"}),
    ("shell", {"command": "F=planbook.toml; echo x > $F"}),
    ("shell", {"command": "mv planbook.toml planbook.bak"}),
    ("shell", {"command": "echo x |\\\n tee planbook.toml"}),
    # Case-folded (the same file on macOS and Windows).
    ("write_file", {"path": "PlanBook.TOML", "content": 'shell = "allow"\n'}),
    ("shell", {"command": "echo x > .GIT/config"}),
    ("shell", {"command": "ls |"}),  # unparseable: cannot tell what it names
    # Sweeping commands pointed at a folder that holds protected settings.
    ("shell", {"command": "rm -rf ."}),
    ("shell", {"command": "find . -name config -delete"}),
    ("shell", {"command": "find -delete"}),
    ("shell", {"command": "git clean -fdx"}),
    ("shell", {"command": "cd sub && rm -rf .."}),
    ("shell", {"command": "chmod -R 000 ./"}),
]


def propose(session: planbook.Session, tool: str, args: dict[str, Any]) -> Any:
    return getattr(session.propose, tool)(**args, reason="attack")


@pytest.mark.parametrize("mode", MODES)
def test_every_protected_change_is_staged_in_every_mode(tmp_path: Path, mode: str) -> None:
    session, root = project(tmp_path)
    session.set_mode(mode)
    # The same rules do let ordinary changes through in act mode: the check can fail.
    if mode == "act":
        applied = propose(session, "write_file", {"path": "a.txt", "content": "b\n"})
        assert applied.status == "done" and (root / "a.txt").read_text() == "b\n"
        ran = propose(session, "shell", {"command": "touch made.txt && ls -la"})
        assert ran.status == "done" and (root / "made.txt").exists()
    before = state(root)
    nb_before = (root / "analysis.ipynb").read_bytes()
    for tool, args in ATTEMPTS:
        step = propose(session, tool, args)
        assert step.status == "pending", (mode, tool, args)
    assert state(root) == before
    assert (root / "analysis.ipynb").read_bytes() != b""
    assert nbformat.reads(nb_before, 4).cells[0].source == "x = 1"
    assert not (root / "pwned").exists()


def test_an_allow_rule_for_protected_settings_is_reported_as_ignored(tmp_path: Path) -> None:
    session, _ = project(tmp_path)
    ignored = [w for w in session.warnings if "ignored for protected settings" in w]
    assert len(ignored) == 2  # the `planbook.toml` rule and the `.git/*` one
    assert "planbook.toml" in ignored[0]
    # The panel's text shows it too (what `%plan` displays where widgets do not render).
    from planbook.surfaces.widget.panel import ReviewPanel

    data, _ = ReviewPanel.for_session(session)._repr_mimebundle_()
    assert "ignored for protected settings" in data["text/plain"]


def test_approving_a_protected_step_applies_it(tmp_path: Path) -> None:
    # Reviewed, not forbidden: the person can still change the settings.
    session, root = project(tmp_path)
    session.set_mode("act")
    propose(session, "write_file", {"path": "planbook.toml", "content": "[permissions]\n"})
    assert session.approve().ok
    assert (root / "planbook.toml").read_text() == "[permissions]\n"


@pytest.mark.parametrize("mode", ["ask", "auto-edit", "act"])
def test_the_agents_tools_ask_the_person_first(tmp_path: Path, mode: str) -> None:
    session, root = project(tmp_path)
    session.set_mode(mode)
    before = state(root)
    ctx = tool_context(session)
    with pytest.raises(ApprovalRequired):
        asyncio.run(write_file_tool(ctx, "planbook.toml", 'shell = "allow"\n', "more power"))
    with pytest.raises(ApprovalRequired):
        asyncio.run(shell_tool(ctx, "git config core.pager 'touch pwned'", "pager"))
    # A pyproject.toml that would only get the table with this very change: the person is
    # asked first (the agent's own check), or it is staged and the agent told so.
    try:
        answer = asyncio.run(
            write_file_tool(ctx, "pyproject.toml", PYPROJECT + "[tool.planbook]\n", "rules")
        )
    except ApprovalRequired:
        answer = "NOT applied: [tool.planbook] (asked)"
    assert "NOT applied" in answer and "[tool.planbook]" in answer
    assert state(root) == before


_names = st.sampled_from(["planbook.toml", ".git/config", "pyproject.toml", "analysis.ipynb"])


@st.composite
def _spelled(draw: st.DrawFn) -> str:
    """A protected name written the way sh still reads as that name."""
    name = draw(_names)
    cut = draw(st.integers(min_value=1, max_value=len(name) - 1))
    style = draw(st.sampled_from(["plain", "single", "double", "split", "escape", "continued"]))
    return {
        "plain": name,
        "single": f"'{name}'",
        "double": f'"{name}"',
        "split": f"{name[:cut]}''{name[cut:]}",
        "escape": f"{name[:cut]}\\{name[cut:]}",
        "continued": f"{name[:cut]}\\\n{name[cut:]}",
    }[style]


@settings(max_examples=80, deadline=None)
@given(
    _spelled(),
    st.sampled_from(
        [
            "echo x > {}",
            "echo x >> ./{}",
            "cp a.txt {}",
            "sed -i s/a/b/ {}",
            "true && rm -f {}",
            "ls; mv {} b",
            "echo $(rm {})",
            "sudo tee -a {} < a.txt",
            "find . -name x -exec cp {{}} {} \\;",
            'python3 -c \'open("{}", "w")\'',
        ]
    ),
)
def test_a_protected_name_however_spelled_is_reviewed(
    tmp_path_factory: pytest.TempPathFactory, name: str, shape: str
) -> None:
    # Inside an interpreter's own code, sh no longer removes `\`: the interpreter's language
    # decides (a known limit: code can build any name, as `'plan' + 'book.toml'` can).
    assume(not (shape.startswith("python3") and "\\" in name))
    root = tmp_path_factory.mktemp("p")
    protected = Protected(root, root / "analysis.ipynb")
    command = shape.format(name)
    assert protected.shell_reason(command), command
