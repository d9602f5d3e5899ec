"""Errors name their fix in the words of the surface the person uses: magics, Python, CLI."""

from __future__ import annotations

import ast
import builtins
import importlib
import pkgutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import TypeGuard

import pytest

import planbook
from planbook import errors
from planbook.errors import NothingToDo, UnknownCheckpoint, UnknownStep, UsageMistake, speak


@pytest.fixture(autouse=True)
def _python_surface() -> Iterator[None]:
    before = errors._spoken[0]
    errors.speak_as("api")
    yield
    errors.speak_as(before)


def test_python_errors_name_python_calls() -> None:
    assert "see them with `print(pb.render_text())`" in str(UnknownStep(9, 3))
    assert "list them with `print(pb.checkpoints_text())`" in str(UnknownCheckpoint("cp-x"))
    message = str(UsageMistake("there is no plan yet: stage a step with `%%propose` first"))
    assert message == "there is no plan yet: stage a step with `pb.propose` first"


def test_the_magics_keep_their_own_words() -> None:
    errors.speak_as("magics")
    assert str(UnknownStep(9, 3)).endswith("see them with `%plan`")


def test_the_cli_names_commands_on_the_notebook() -> None:
    exc = UsageMistake("use `%rollback --force` to do it anyway")
    assert exc.said_to("cli", notebook="a.ipynb") == (
        "use `planbook rollback a.ipynb --force` to do it anyway"
    )


@pytest.mark.parametrize(
    ("magic", "call"),
    [
        ('`%plan revise "use bars"`', '`pb.revise("use bars")`'),
        ("`%rollback cp-1`", '`pb.rollback("cp-1")`'),
        ("`%%propose --after <cell id>`", "`pb.propose.insert_cell(source, after=<cell id>)`"),
        ("`%answer d1 2`", "`%answer d1 2`"),  # nothing to say instead: kept
    ],
)
def test_fixes_with_arguments(magic: str, call: str) -> None:
    assert speak(f"try {magic}", "api") == f"try {call}"


def test_nothing_to_do_is_a_usage_mistake() -> None:
    # Surfaces that catch UsageMistake keep working; the CLI maps it to its own exit code.
    assert issubclass(NothingToDo, UsageMistake)


def test_a_plain_script_hears_python(tmp_path: Path) -> None:
    """No magics in sight: the message a script prints names the API, never `%%propose`."""
    import nbformat

    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "empty.ipynb")
    script = (
        "import planbook\n"
        "pb = planbook.session(notebook='empty.ipynb')\n"
        "try:\n"
        "    pb.approve()\n"
        "except planbook.errors.PlanbookError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "there is no plan yet: stage a step with `pb.propose` first\n"


# --- one hierarchy: every exception planbook defines is in errors.py and a PlanbookError ------


def planbook_modules() -> list[ModuleType]:
    """Every module of the package, imported (``__main__`` would run the CLI)."""
    found = pkgutil.walk_packages(planbook.__path__, "planbook.")
    return [importlib.import_module(m.name) for m in found if not m.name.endswith("__main__")]


def is_exception(value: object) -> TypeGuard[type[BaseException]]:
    return isinstance(value, type) and issubclass(value, BaseException)


def nested_exception_classes(module: ModuleType) -> list[str]:
    """Exception classes defined inside a function or a class, which ``vars`` cannot see."""
    source = Path(module.__file__ or "").read_text(encoding="utf-8")
    tree = ast.parse(source)
    top = {id(node) for node in tree.body}
    scope = {**vars(builtins), **vars(module)}
    return [
        f"{module.__name__}.{node.name} (line {node.lineno})"
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and id(node) not in top
        for base in node.bases
        if isinstance(base, ast.Name) and is_exception(scope.get(base.id))
    ]


def test_every_exception_planbook_defines_is_in_errors_py() -> None:
    outside: set[str] = set()
    for module in planbook_modules():
        if module.__name__ == "planbook.errors":
            continue
        outside.update(
            f"{module.__name__}.{name}"
            for name, value in vars(module).items()
            if is_exception(value) and value.__module__ == module.__name__
        )
        outside.update(nested_exception_classes(module))
    assert outside == set(), "define these in planbook/errors.py"


def test_every_exception_in_errors_py_is_a_planbook_error() -> None:
    defined = [
        value
        for value in vars(errors).values()
        if is_exception(value) and value.__module__ == "planbook.errors"
    ]
    assert len(defined) > 20
    assert [e.__name__ for e in defined if not issubclass(e, errors.PlanbookError)] == []


@pytest.mark.parametrize(
    ("name", "where", "parent"),
    [
        ("RulesError", "planbook.engine.rules.matching", "PlanbookError"),
        ("PolicyDenied", "planbook.engine.policy", "PlanbookError"),
        ("NotDurable", "planbook.engine.executor.run", "PlanbookError"),
        ("NoModelConfigured", "planbook.agent.config", "PlanbookError"),
        ("UnknownDecision", "planbook.agent.decisions", "UsageMistake"),
        ("UnknownCellName", "planbook.engine.anchors", "UnknownCell"),
        ("BadMessage", "planbook.surfaces.widget.messages", "UsageMistake"),
        ("RunStopped", "planbook.agent.run", "PlanbookError"),
    ],
)
def test_moved_errors_are_the_ones_their_modules_raise(name: str, where: str, parent: str) -> None:
    """The modules raise the class from errors.py (one class, so `except` clauses match)."""
    moved = getattr(errors, name)
    assert moved.__bases__ == (getattr(errors, parent),)
    assert getattr(importlib.import_module(where), name) is moved


def test_a_moved_name_stays_where_the_notebooks_import_it() -> None:
    """notebooks/bring-your-model.ipynb catches ``planbook.agent.config.NoModelConfigured``."""
    from planbook.agent import config

    assert "NoModelConfigured" in config.__all__
    with pytest.raises(errors.NoModelConfigured, match="no model configured"):
        config.resolve_model(config.AgentConfig())


def test_the_shell_classifier_still_explains_why_a_command_is_a_write() -> None:
    from planbook.engine.rules.classifier import classify

    verdict = classify("sort -o out.txt data.txt")
    assert (verdict.read_only, verdict.reason) == (False, "`sort -o` writes a file")
