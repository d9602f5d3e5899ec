"""An MCP client trying what it must not: approving through any tool, reaching outside the
workspace, changing planbook's settings, .git or the notebook file, malformed and oversized
arguments; reading a notebook without planbook metadata; two clients proposing at once."""

from __future__ import annotations

from pathlib import Path

import anyio
import nbformat

import planbook
from planbook.surfaces.mcp.limits import TEXT_CHARS
from tests.support.mcp_client import connect, ok, refused


def plain_notebook(folder: Path, name: str = "plain.ipynb") -> Path:
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x = 1")
    cell["id"] = "one"
    nb.cells = [cell]
    path = folder / name
    nbformat.write(nb, path)
    return path


def steps(path: Path) -> list[dict]:  # type: ignore[type-arg]
    nb = nbformat.read(path, as_version=4)
    plans = nb.metadata.get("planbook", {}).get("plans", {})
    return [s for p in plans.values() for s in p["revisions"][-1]["steps"]]


def test_no_tool_approves_and_bad_calls_change_nothing(tmp_path: Path) -> None:
    path = plain_notebook(tmp_path)
    (tmp_path.parent / "secret.txt").write_text("outside\n")
    before = path.read_bytes()

    async def main() -> None:
        async with connect(path) as session:
            for name in ("approve", "approve_step", "reject", "set_mode", "answer", "add_rule"):
                assert "unknown tool" in await refused(session, name, steps="1")
            # outside the workspace, by .. and by absolute path, reading and proposing
            assert "outside" in await refused(session, "read_file", path="../secret.txt")
            assert "outside" in await refused(session, "read_file", path="/etc/passwd")
            assert "outside" in await refused(session, "list_files", path="..")
            assert "outside" in await refused(
                session, "propose_write_file", path="../evil.txt", content="x", reason="r"
            )
            assert "outside" in await refused(
                session, "read_notebook", notebook="../elsewhere.ipynb"
            )
            # unknown cells and notebooks
            assert "no cell" in await refused(session, "read_cell", cell="nope")
            assert "nope" in await refused(
                session, "propose_edit_cell", cell="nope", source="y", reason="r"
            )
            assert "not a notebook" in await refused(session, "read_plan", notebook="secret.txt")
            # malformed: a wrong type, a missing reason, an argument no tool takes
            assert "invalid argument `source`" in await refused(
                session, "propose_edit_cell", cell="one", source=123, reason="r"
            )
            assert "invalid argument `reason`" in await refused(
                session, "propose_edit_cell", cell="one", source="y"
            )
            assert "takes no argument 'approved'" in await refused(
                session, "propose_edit_cell", cell="one", source="y", reason="r", approved=True
            )
            assert "invalid argument `timeout_s`" in await refused(
                session, "wait_for_review", timeout_s=-1
            )
            # oversized: refused before it reaches the engine
            big = await refused(
                session,
                "propose_write_file",
                path="big.txt",
                content="x" * (TEXT_CHARS + 1),
                reason="r",
            )
            assert "invalid argument `content`" in big and "at most" in big

    anyio.run(main)
    assert path.read_bytes() == before
    assert not (tmp_path.parent / "evil.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.ipynb"]  # no lock file left


def test_settings_git_and_the_notebook_are_staged_protected_never_applied(tmp_path: Path) -> None:
    path = plain_notebook(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / "planbook.toml").write_text("")

    async def main() -> None:
        async with connect(path) as session:
            for target in ("planbook.toml", ".git/config"):
                said = await ok(session, "propose_write_file", path=target, content="x", reason="r")
                assert said.startswith("Staged") and "marked protected" in said
            said = await ok(session, "propose_shell", command="rm -rf .git", reason="r")
            assert "marked protected" in said
            notebook = await session.call_tool(
                "propose_write_file", {"path": "plain.ipynb", "content": "{}", "reason": "r"}
            )
            assert notebook.is_error and "the notebook itself" in notebook.content[0].text

    anyio.run(main)
    assert [s["status"] for s in steps(path)] == ["pending", "pending", "pending"]
    assert (tmp_path / "planbook.toml").read_text() == ""
    assert (tmp_path / ".git" / "config").read_text() == "[core]\n"


def test_reading_a_notebook_without_planbook_metadata_never_writes_it(tmp_path: Path) -> None:
    path = plain_notebook(tmp_path)
    # as an older tool wrote it: nbformat 4.4, no cell ids, no planbook metadata
    raw = (
        path.read_text()
        .replace('"id": "one",', "")
        .replace('"nbformat_minor": 5', '"nbformat_minor": 4')
    )
    path.write_text(raw)
    before = path.read_bytes()

    async def main() -> None:
        async with connect(path) as session:
            listed = await ok(session, "read_notebook")
            assert "#1 id=" in listed
            cell_id = listed.split("#1 id=")[1].split()[0]
            assert "x = 1" in await ok(session, "read_cell", cell=cell_id)
            assert "no plan yet" in await ok(session, "read_plan")
            assert "nothing to wait for" in await ok(session, "wait_for_review", timeout_s=0)
            await refused(session, "propose_delete_cell", cell="missing", reason="r")
            assert path.read_bytes() == before
            # the id read above names the same cell when a step is staged
            await ok(session, "propose_edit_cell", cell=cell_id, source="x = 2", reason="r")

    anyio.run(main)
    assert path.read_bytes() != before
    assert [s["operation"]["source"] for s in steps(path)] == ["x = 2"]


def test_two_clients_proposing_at_once_keep_every_step_in_order(tmp_path: Path) -> None:
    path = plain_notebook(tmp_path)
    each = 6

    async def client(name: str) -> None:
        async with connect(path, name=name) as session:
            for n in range(each):
                await ok(
                    session,
                    "propose_write_file",
                    path=f"{name}-{n}.txt",
                    content=f"{n}\n",
                    reason=f"{name} {n}",
                )

    async def main() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(client, "alpha")
            group.start_soon(client, "beta")

    anyio.run(main)
    staged = steps(path)
    assert len(staged) == 2 * each
    for name in ("alpha", "beta"):
        mine = [s["reason"] for s in staged if s["origin"] == f"{name} 1.0 (MCP)"]
        assert mine == [f"{name} {n}" for n in range(each)]


def test_act_mode_and_allow_rules_apply_nothing_a_client_proposes(tmp_path: Path) -> None:
    """The mode and the rules are the person's grants to their own agent: a notebook left in
    act mode, with a rule allowing every shell command and file write, still only stages what
    an MCP client proposes; nothing runs and no file is written until the person approves."""
    path = plain_notebook(tmp_path)
    (tmp_path / "planbook.toml").write_text(
        '[permissions]\nshell = "allow"\nwrite_file = "allow"\nedit_cell = "allow"\n'
    )
    session = planbook.session(path, live=False, fresh=True)
    session.set_mode("act")
    session.close()

    async def main() -> None:
        async with connect(path) as client:
            said = await ok(client, "propose_shell", command="touch ran.txt", reason="r")
            assert said.startswith("Staged")
            await ok(client, "propose_write_file", path="new.txt", content="x\n", reason="r")
            await ok(client, "propose_edit_cell", cell="one", source="x = 2", reason="r")

    anyio.run(main)
    assert [s["status"] for s in steps(path)] == ["pending", "pending", "pending"]
    assert not (tmp_path / "ran.txt").exists() and not (tmp_path / "new.txt").exists()
    assert nbformat.read(path, as_version=4).cells[0].source == "x = 1"


def test_a_deny_rule_refuses_what_a_client_proposes(tmp_path: Path) -> None:
    """What the person's rules deny, a client cannot even stage: one line, no step, and the
    notebook untouched (an MCP proposal is staged whatever allows it, never whatever denies)."""
    path = plain_notebook(tmp_path)
    (tmp_path / "planbook.toml").write_text('[permissions]\nshell = { "rm *" = "deny" }\n')
    before = path.read_bytes()

    async def main() -> None:
        async with connect(path) as client:
            said = await refused(client, "propose_shell", command="rm -rf data", reason="r")
            assert "refused by a permission rule" in said and "\n" not in said
            assert (await ok(client, "propose_shell", command="ls", reason="r")).startswith(
                "Staged"
            )

    anyio.run(main)
    assert path.read_bytes() != before  # the allowed one was staged
    assert [s["operation"]["command"] for s in steps(path)] == ["ls"]
