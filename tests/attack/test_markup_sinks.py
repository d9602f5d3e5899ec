"""Every hostile string of the catalogue, in every field a step, a model or a received notebook
fills, through every Python surface: nothing active reaches a markdown bundle and no control
character reaches a text surface as it is.

Three ways a payload gets in: staged through the Session as a person or a tool would
(``staged``), written by an agent run (its final text, a tool call's arguments, the reason and
summary it gives), and carried by a received notebook whose stored plan was edited as plain
JSON (``received``). ``leaks`` renders one case through every sink and returns what got
through; ``scripts/`` style counting reuses it (see ``count_leaks``).
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from planbook.agent.run import AgentRun, plan_task
from planbook.agents import Scripted
from planbook.documents.base import Cell
from planbook.documents.file import FileNotebook
from planbook.documents.memory import MemoryNotebook
from planbook.errors import PlanbookError
from planbook.sessions.session import Session
from planbook.surfaces.cli import main as cli
from planbook.surfaces.comm.view import plan_message
from planbook.surfaces.plan_handle import PlanHandle
from planbook.surfaces.widget.panel import ReviewPanel
from planbook.workspace.files import Workspace
from tests.attack.payloads import ALL, CONTROL
from tests.support.attack import sender_session
from tests.support.markup import active_markup, raw_controls

#: Colours planbook's own terminal output adds (``planbook show --color``).
_OWN_COLOURS = re.compile(r"\x1b\[(?:3[126]|0)m")

Sink = Callable[[], str]


def _markdown_sinks(session: Session) -> dict[str, Sink]:
    return {
        "pb.plan markdown": lambda: PlanHandle(session)._repr_markdown_(),
        "panel fallback markdown": lambda: ReviewPanel(session)._repr_mimebundle_()[0][
            "text/markdown"
        ],
    }


def _display_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in ("id", "cell_id", "plan_id", "anchor", "before", "after"):
                yield from _display_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _display_strings(item)


def _text_sinks(session: Session) -> dict[str, Sink]:
    return {
        "plan text": lambda: repr(PlanHandle(session)),
        "plan text coloured": lambda: _OWN_COLOURS.sub("", session.render_text(color=True)),
        "panel fallback text": lambda: ReviewPanel(session)._repr_mimebundle_()[0]["text/plain"],
        "panel view": lambda: "\n".join(_display_strings(ReviewPanel(session).view)),
        "in-cell review": lambda: "\n".join(_display_strings(plan_message(session))),
    }


def _check(markdown: dict[str, Sink], text: dict[str, Sink]) -> tuple[int, list[str]]:
    leaked: list[str] = []
    for name, sink in markdown.items():
        shown = sink()
        leaked += [f"{name}: {p}" for p in active_markup(shown)]
        leaked += [f"{name}: raw {c}" for c in raw_controls(shown)]
    for name, sink in text.items():
        leaked += [f"{name}: raw {c}" for c in raw_controls(sink())]
    return len(markdown) + len(text), leaked


# --- staged through the Session ---------------------------------------------------------------
STAGED_FIELDS = (
    "reason",
    "task",
    "summary",
    "cell source",
    "inserted source",
    "shell command",
    "file path",
    "file content",
)


def _memory_session(root: Path) -> Session:
    cells = [Cell(id="c1", source="x = 1"), Cell(id="c2", source="print(x)")]
    return Session(MemoryNotebook(cells), Workspace(root))


def staged(field: str, payload: str, root: Path) -> Session | None:
    """A session whose plan carries ``payload`` in ``field``; None when staging refused it."""
    session = _memory_session(root)
    propose = session.propose
    try:
        if field == "task":
            session.new_plan(payload)
        if field == "reason":
            propose.edit_cell("c1", "x = 2", reason=payload)
        elif field == "cell source":
            propose.edit_cell("c1", payload, reason="edit")
        elif field == "inserted source":
            propose.insert_cell(payload, after="c1", reason="insert")
        elif field == "shell command":
            propose.shell(payload, reason="run")
        elif field == "file path":
            propose.write_file(payload, "content\n", reason="write")
        elif field == "file content":
            propose.write_file("notes.md", payload, reason="write")
        else:
            propose.edit_cell("c1", "x = 2", reason="edit")
        if field == "summary":
            session.set_summary(payload)
    except PlanbookError:
        return None
    return session


def leaks_staged(field: str, payload: str, root: Path) -> tuple[int, list[str]]:
    session = staged(field, payload, root)
    if session is None:
        return 0, []
    return _check(_markdown_sinks(session), _text_sinks(session))


# --- carried by a received notebook -------------------------------------------------------------
#: Stored keys a sender can set to anything, and where they sit in the plan's JSON.
RECEIVED_FIELDS = (
    "reason",
    "task",
    "summary",
    "feedback",
    "error",
    "source",
    "command",
    "path",
    "cell_id",
    "origin",
    "log detail",
    "output",
    "diff",
    "after_run",
)
#: A preview the sender's notebook carries on its shell step (model/preview.py), as JSON.
STORED_PREVIEW = {
    "command": "ls",
    "exit_code": 0,
    "output": "listing",
    "changes": [{"path": "made.txt", "kind": "created", "diff": "+made\n"}],
    "at": "2026-11-26T09:00:00Z",
    "after_run": "the changes match the preview",
}


@functools.cache
def _sender_notebook() -> str:
    """The sender's notebook as they send it: made once (a session, four staged steps and a
    sandboxed preview), then written afresh for each of the ~700 cases that poison it."""
    with tempfile.TemporaryDirectory() as folder:
        path, sender = sender_session(Path(folder))
        sender.new_plan("tidy up")
        sender.propose.edit_cell("c1", "x = 2", reason="edit")
        sender.propose.shell("ls", reason="look")
        sender.propose.write_file("notes.md", "hello\n", reason="note")
        sender.set_summary("a summary")
        return path.read_text(encoding="utf-8")


def _received_notebook(root: Path) -> Path:
    path = root / "received.ipynb"
    path.write_text(_sender_notebook(), encoding="utf-8")
    return path


def _poison(node: Any, key: str, payload: str) -> None:
    if isinstance(node, dict):
        for name, value in list(node.items()):
            if name == key and (isinstance(value, str) or value is None):
                node[name] = payload
            else:
                _poison(value, key, payload)
    elif isinstance(node, list):
        for item in node:
            _poison(item, key, payload)


def received(field: str, payload: str, root: Path) -> Path:
    """A notebook file whose stored plan was edited as plain JSON to carry ``payload``."""
    path = _received_notebook(root)
    data = json.loads(path.read_text(encoding="utf-8"))
    meta = data["metadata"]["planbook"]
    for plan in meta["plans"].values():
        for step in plan["revisions"][-1]["steps"]:
            if step["operation"]["kind"] == "shell":
                step["preview"] = json.loads(json.dumps(STORED_PREVIEW))
    if field == "log detail":
        _poison(meta["log"], "detail", payload)
    else:
        _poison(meta["plans"], field, payload)
        if field == "error":  # an error shows on a failed step
            for plan in meta["plans"].values():
                for step in plan["revisions"][-1]["steps"]:
                    step["status"] = "failed"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _cli(argv: list[str]) -> str:
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        cli.main(argv)
    return out.getvalue() + err.getvalue()


def leaks_received(field: str, payload: str, root: Path) -> tuple[int, list[str]]:
    path = received(field, payload, root)
    text: dict[str, Sink] = {
        "planbook show": lambda: _cli(["show", str(path)]),
        "planbook show --color": lambda: _OWN_COLOURS.sub("", _cli(["show", "--color", str(path)])),
        "planbook log": lambda: _cli(["log", str(path)]),
    }
    try:
        session = Session(
            FileNotebook(path), Workspace(root, protected=(path,)), notebook_path=path
        )
    except PlanbookError:
        return _check({}, text)  # refused as a whole: only the CLI's line shows
    return _check(_markdown_sinks(session), {**_text_sinks(session), **text})


# --- written by an agent run --------------------------------------------------------------------
def agent_run(payload: str, root: Path) -> AgentRun:
    """A run whose model writes ``payload`` everywhere it can: the task it was given, a read
    tool's arguments, a staged step's source and reason, the plan's summary, its final text."""
    session = _memory_session(root)
    script = Scripted(
        [
            ("read_file", {"path": payload}),
            ("read_cell", {"cell_id": payload}),
            ("insert_cell", {"source": payload, "after": "c1", "reason": payload}),
            ("present_plan", {"summary": payload}),
        ],
        final=payload,
    )

    async def go() -> AgentRun:
        return await plan_task(session, payload, model=script)

    return asyncio.run(go())


def leaks_agent(payload: str, root: Path) -> tuple[int, list[str]]:
    run = agent_run(payload, root)
    markdown = {"agent view markdown": run._repr_markdown_, **_markdown_sinks(run.session)}
    return _check(markdown, {"agent view text": lambda: repr(run), **_text_sinks(run.session)})


# --- the tests ------------------------------------------------------------------------------------
def _ids(cases: list[tuple[str, str]]) -> list[str]:
    return [name for name, _ in cases]


@pytest.mark.parametrize("field", STAGED_FIELDS)
@pytest.mark.parametrize("payload", [p for _, p in ALL], ids=_ids(ALL))
def test_a_staged_payload_stays_inert_everywhere(field: str, payload: str, tmp_path: Path) -> None:
    tried, leaked = leaks_staged(field, payload, tmp_path)
    assert leaked == []
    if field not in ("file path",):
        assert tried > 0, "the payload was refused before any surface showed it"


@pytest.mark.parametrize("field", RECEIVED_FIELDS)
@pytest.mark.parametrize("payload", [p for _, p in ALL], ids=_ids(ALL))
def test_a_received_notebooks_payload_stays_inert_everywhere(
    field: str, payload: str, tmp_path: Path
) -> None:
    _, leaked = leaks_received(field, payload, tmp_path)
    assert leaked == []


@pytest.mark.parametrize("payload", [p for _, p in ALL], ids=_ids(ALL))
def test_a_models_payload_stays_inert_everywhere(payload: str, tmp_path: Path) -> None:
    tried, leaked = leaks_agent(payload, tmp_path)
    assert tried > 0 and leaked == []


def test_a_models_formatting_survives_but_its_html_does_not(tmp_path: Path) -> None:
    text = "Cleaned **three** columns with `df.dropna()`; <b>see</b> [docs](javascript:x)"
    run = agent_run(text, tmp_path)
    shown = run._repr_markdown_()
    assert "**three**" in shown and "`df.dropna()`" in shown  # the model's formatting stays
    assert "&lt;b&gt;see&lt;/b&gt;" in shown and "\\[docs\\]" in shown
    assert active_markup(shown) == []


@pytest.mark.parametrize("payload", [p for _, p in CONTROL], ids=_ids(CONTROL))
def test_planbook_show_writes_control_characters_as_escapes(payload: str, tmp_path: Path) -> None:
    path = received("reason", payload, tmp_path)
    shown = _cli(["show", str(path)])
    assert raw_controls(shown) == []
    # the reviewer sees what is stored: each hidden character as its escape
    assert "\\x1b" in shown or "\\r" in shown or "\\u" in shown or "\\x" in shown or "\\b" in shown


def test_a_fence_is_longer_than_any_backtick_run_in_the_code(tmp_path: Path) -> None:
    source = "print(1)\n```\n`````\n<img src=x onerror=alert(1)>"
    session = staged("cell source", source, tmp_path)
    assert session is not None
    shown = PlanHandle(session)._repr_markdown_()
    assert "``````diff" in shown  # six: one more than the longest run inside
    assert active_markup(shown) == []


def count_leaks(root: Path) -> tuple[int, int]:
    """(payload x field x sink cases tried, cases with something through) over the catalogue."""
    tried = through = 0
    n = 0

    def fresh(name: str) -> Path:
        (root / name).mkdir(parents=True)
        return root / name

    for _, payload in ALL:
        for field in STAGED_FIELDS:
            n += 1
            t, leaked = leaks_staged(field, payload, fresh(f"s{n}"))
            tried, through = tried + t, through + len({x.split(":")[0] for x in leaked})
        for field in RECEIVED_FIELDS:
            n += 1
            t, leaked = leaks_received(field, payload, fresh(f"r{n}"))
            tried, through = tried + t, through + len({x.split(":")[0] for x in leaked})
        n += 1
        t, leaked = leaks_agent(payload, fresh(f"a{n}"))
        tried, through = tried + t, through + len({x.split(":")[0] for x in leaked})
    return tried, through


def test_a_notebooks_file_name_is_shown_as_text(tmp_path: Path) -> None:
    path = tmp_path / "<img src=x onerror=alert(1)>\x1b[2K.ipynb"
    nbformat.write(nbformat.v4.new_notebook(), path)
    session = Session(
        FileNotebook(path), Workspace(tmp_path, protected=(path,)), notebook_path=path
    )
    shown = PlanHandle(session)._repr_markdown_()
    assert "no plan yet" in shown and active_markup(shown) == [] and raw_controls(shown) == []
    assert raw_controls(repr(PlanHandle(session))) == []
