"""The floors of docs/architecture.md, enforced: every import in planbook/ points down a floor
(or stays inside its own folder), no two modules import each other by any path, and an import
inside a function is only there to load a heavy optional dependency late, with a comment saying
which. Module-level, function-local and TYPE_CHECKING imports all count: a circle held open by
a late import is still a circle."""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "planbook"

#: Floors from the bottom up; a module may import its own floor's folder and any floor below.
#: Floors on one row are siblings: neither imports the other.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("planbook.errors", "planbook.version"),
    ("planbook.model",),
    ("planbook.documents", "planbook.workspace"),
    ("planbook.engine",),
    ("planbook.present",),
    ("planbook.sessions",),
    ("planbook.agent",),
    ("planbook.surfaces",),
    ("planbook", "planbook.__main__", "planbook.agents"),
)

#: Surfaces use the Session's public API: they never call into a document, the engine or the
#: workspace (naming a type the Session hands them, under TYPE_CHECKING, is not a call).
SURFACES_MAY_NOT_IMPORT = ("planbook.documents", "planbook.engine", "planbook.workspace")

#: How a late import says why it is late.
HEAVY_MARK = "# heavy:"


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the planbook module imported, or the top-level name of a third-party one
    line: int
    local: bool  # inside a function
    type_only: bool  # under `if TYPE_CHECKING:`
    marked_heavy: bool


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The planbook module an import names (``from planbook.x import y`` may name module y)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _in_import_run(line: str) -> bool:
    """Blank lines and imports belong to the run of imports a mark above it covers."""
    stripped = line.strip()
    return not stripped or stripped.startswith(("from ", "import "))


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> list[Import]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    found: list[Import] = []

    def marked(node: ast.stmt) -> bool:
        """The mark on the import itself, or on the line above the run of imports it is in."""
        first = node.lineno - 1
        while first > 0 and (
            not lines[first - 1].strip()
            or lines[first - 1].strip().startswith(("from ", "import "))
        ):
            first -= 1
        around = lines[max(first - 1, 0) : node.end_lineno or node.lineno]
        return any(HEAVY_MARK in line for line in around)

    def visit(node: ast.AST, local: bool, type_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            in_function = local or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            in_type_block = type_only or (
                isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
            )
            if isinstance(child, ast.Import | ast.ImportFrom):
                if isinstance(child, ast.Import):
                    names = [alias.name for alias in child.names]
                else:
                    assert child.level == 0, f"{name}:{child.lineno}: relative import"
                    base = child.module or ""
                    names = [f"{base}.{alias.name}" for alias in child.names]
                for imported in names:
                    target = (
                        resolve(imported, modules)
                        if imported.startswith("planbook")
                        else imported.split(".")[0]
                    )
                    if target is None or target == name:
                        continue
                    found.append(
                        Import(name, target, child.lineno, local, in_type_block, marked(child))
                    )
            visit(child, in_function, in_type_block)

    visit(ast.parse(text), False, False)
    return found


@pytest.fixture(scope="module")
def graph() -> list[Import]:
    modules = all_modules()
    return [imp for name, path in modules.items() for imp in imports_of(name, path, modules)]


def floor_of(module: str) -> int:
    best, best_len = -1, -1
    for level, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            exact = prefix in ("planbook", "planbook.__main__", "planbook.agents")
            hit = module == prefix if exact else module == prefix or module.startswith(prefix + ".")
            if hit and len(prefix) > best_len:
                best, best_len = level, len(prefix)
    assert best >= 0, f"{module} is on no floor: add its folder to FLOORS and docs/architecture.md"
    return best


def folder_of(module: str) -> str:
    """The floor's folder a module lives in (planbook.engine.rules.x -> planbook.engine)."""
    return ".".join(module.split(".")[:2])


def test_every_module_is_on_a_floor() -> None:
    for module in all_modules():
        floor_of(module)


def test_imports_point_down_a_floor(graph: list[Import]) -> None:
    upward = []
    for imp in graph:
        if not imp.target.startswith("planbook"):
            continue
        here, there = floor_of(imp.source), floor_of(imp.target)
        if there < here or folder_of(imp.source) == folder_of(imp.target):
            continue
        kind = "a sibling floor" if there == here else "a floor above"
        upward.append(f"{imp.source}:{imp.line} imports {imp.target} ({kind})")
    assert not upward, "imports that do not point down a floor:\n" + "\n".join(upward)


def test_no_import_circles(graph: list[Import]) -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for imp in graph:
        if imp.target.startswith("planbook"):
            edges[imp.source].add(imp.target)
    circles = strongly_connected(edges)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_surfaces_go_through_the_session(graph: list[Import]) -> None:
    reaching = [
        f"{imp.source}:{imp.line} imports {imp.target}"
        for imp in graph
        if floor_of(imp.source) == floor_of("planbook.surfaces")
        and imp.target.startswith(SURFACES_MAY_NOT_IMPORT)
        and not imp.type_only
    ]
    assert not reaching, "surfaces reaching past the Session:\n" + "\n".join(reaching)


def test_late_imports_say_which_heavy_dependency(graph: list[Import]) -> None:
    unexplained = sorted(
        {
            f"{imp.source}:{imp.line} imports {imp.target} inside a function"
            for imp in graph
            if imp.local and not imp.type_only and not imp.marked_heavy
        }
    )
    assert not unexplained, (
        f"late imports without a `{HEAVY_MARK} ...` comment saying which heavy dependency they "
        "defer (anything else belongs at the top of the module):\n" + "\n".join(unexplained)
    )


def test_the_checker_sees_an_upward_import_and_a_circle(tmp_path: Path) -> None:
    """The rules above are only as good as the parser: it must see an import hidden in a
    function and one under TYPE_CHECKING."""
    source = (
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from planbook.surfaces.magics import x\n"
        "def f():\n"
        "    from planbook.sessions.session import Session\n"
        "def g():\n"
        "    x = 1\n"
        "\n"
        "    # heavy: pydantic-ai\n"
        "    import pydantic_ai\n"
        "\n"
        "    from pydantic_ai import Agent\n"
        "    import json\n"
    )
    path = PACKAGE / "engine" / "probe.py"
    (tmp_path / "probe.py").write_text(source)
    modules = {**all_modules(), "planbook.engine.probe": path}
    found = [
        i
        for i in imports_of("planbook.engine.probe", tmp_path / "probe.py", modules)
        if i.target.startswith("planbook")
    ]
    assert {(i.target, i.local, i.type_only) for i in found} == {
        ("planbook.surfaces.magics", False, True),
        ("planbook.sessions.session", True, False),
    }
    assert all(floor_of(i.target) > floor_of("planbook.engine.probe") for i in found)
    late = {
        (i.target, i.marked_heavy)
        for i in imports_of("planbook.engine.probe", tmp_path / "probe.py", modules)
        if i.local
    }
    # the mark covers its run of imports, and only that run
    assert late == {
        ("planbook.sessions.session", False),
        ("pydantic_ai", True),
        ("json", True),
    }
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one module, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_map_in_docs_names_every_module_as_its_docstring_says() -> None:
    """docs/architecture.md's module map is what tools/make_architecture.py writes from the
    package as it is now: a module added, removed or redescribed without the map fails here."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_architecture", PACKAGE.parent / "tools" / "make_architecture.py"
    )
    assert spec is not None and spec.loader is not None
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    page = maker.PAGE.read_text(encoding="utf-8")
    assert "NO DOCSTRING" not in maker.module_map(), "every module says its one job"
    assert page == maker.rewritten(page), (
        "docs/architecture.md's module map is out of date: run `python tools/make_architecture.py`"
    )
