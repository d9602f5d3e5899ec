"""planbook's agent as an MCP client: a real MCP server (tests/agent/mcp_things_server.py, the
official SDK over stdio, started as a subprocess by the toolset) driven through the agent's real
tool path by a scripted model. Reads run at once; writes become ``mcp_call`` steps that run
once approved; rules match ``server.tool``; a bad ``[mcp.servers]`` entry is one line."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import planbook
from planbook.agent.context import decisions_of
from planbook.agent.run import plan_task
from planbook.engine.rules.file import scopes_for
from planbook.engine.rules.mcp_tools import looks_like_write, runs_at_once, word_parts
from planbook.errors import NothingToDo
from planbook.model.operations import McpCall
from tests.agent.conftest import make_session, next_decision
from tests.support.rules import own_rules
from tests.support.tamper import after_first_step

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

SERVER = Path(__file__).with_name("mcp_things_server.py")


@dataclass
class Things:
    """The test server's project: its planbook.toml and the log of what its tools did."""

    root: Path
    rules: str = ""
    extra: str = ""

    @property
    def log(self) -> Path:
        return self.root / "things.jsonl"

    def write(self) -> None:
        own_rules(  # the person's own file, trusted
            self.root / "planbook.toml",
            f"{self.rules}\n"
            "[mcp.servers.things]\n"
            f"command = {json.dumps(sys.executable)}\n"
            f"args = [{json.dumps(str(SERVER))}]\n"
            f"env = {{ THINGS_LOG = {json.dumps(str(self.log))} }}\n"
            f"{self.extra}\n",
        )

    def calls(self) -> list[dict[str, Any]]:
        """What the server's tools were called with, in order (nothing: an empty list)."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]


@pytest.fixture
def things(tmp_path: Path) -> Things:
    project = Things(tmp_path)
    project.write()
    return project


@dataclass
class Model:
    """Plays ``calls`` one per model request; keeps what each tool returned to the model."""

    calls: list[tuple[str, dict[str, Any]]]
    returned: dict[str, list[str]] = field(default_factory=dict)
    tools: dict[str, str] = field(default_factory=dict)

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.tools = {t.name: t.description or "" for t in info.function_tools}
        last = messages[-1]
        if isinstance(last, ModelRequest):
            for part in last.parts:
                if isinstance(part, ToolReturnPart | RetryPromptPart) and part.tool_name:
                    text = (
                        part.model_response_str()
                        if isinstance(part, ToolReturnPart)
                        else part.model_response()
                    )
                    self.returned.setdefault(part.tool_name, []).append(text)
        made = sum(isinstance(m, ModelResponse) for m in messages)
        if made < len(self.calls):
            name, args = self.calls[made]
            return ModelResponse(parts=[ToolCallPart(name, args)])
        return ModelResponse(parts=[TextPart("done")])

    def model(self) -> FunctionModel:
        return FunctionModel(self.respond)


async def play(
    session: planbook.Session, *calls: tuple[str, dict[str, Any]], mode: str = "plan"
) -> tuple[Model, Any]:
    session.set_mode(mode)
    model = Model(list(calls))
    run = await plan_task(session, "work with things", model=model.model())
    assert run.status == "finished", run.error
    return model, run


def errors(run: Any) -> list[str]:
    return [a.message for a in run.activity if a.type == "error"]


def mcp_steps(session: planbook.Session) -> list[McpCall]:
    plan = session.current_plan()
    steps = plan.steps if plan is not None else []
    return [s.operation for s in steps if isinstance(s.operation, McpCall)]


async def test_a_read_runs_at_once_and_its_result_reaches_the_model(
    things: Things, tmp_path: Path
) -> None:
    session = make_session(tmp_path)
    model, run = await play(session, ("things_get_thing", {"name": "lamp"}))
    assert things.calls() == [{"tool": "get_thing", "arguments": {"name": "lamp"}}]
    assert model.returned["things_get_thing"] == ["thing lamp is blue"]
    assert mcp_steps(session) == []
    # the model is told which tools run at once and which are staged
    assert "read-only, runs at once" in model.tools["things_get_thing"]
    assert "staged as a step" in model.tools["things_add_thing"]
    assert "staged as a step" in model.tools["things_create_thing"]
    assert errors(run) == []


async def test_a_write_is_staged_and_runs_once_when_approved(
    things: Things, tmp_path: Path
) -> None:
    session = make_session(tmp_path)
    model, _ = await play(session, ("things_add_thing", {"name": "chair", "colour": "green"}))
    assert things.calls() == []  # nothing happened on the server
    assert "Queued as step 1" in model.returned["things_add_thing"][0]
    [op] = mcp_steps(session)
    assert (op.server, op.tool, op.args) == (
        "things",
        "add_thing",
        {"colour": "green", "name": "chair"},
    )
    review = session.render_text()
    assert "call things.add_thing" in review
    assert "rollback cannot undo it" in review
    assert '"colour": "green"' in review  # the arguments, as pretty JSON
    [view] = session.step_views()
    assert view.title == "call `things.add_thing`" and view.risk == "high"

    report = session.approve()
    assert report.ok, report
    assert things.calls() == [
        {"tool": "add_thing", "arguments": {"name": "chair", "colour": "green"}}
    ]
    plan = session.current_plan()
    assert plan is not None
    assert plan.steps[0].status == "done"
    assert plan.results[-1].message == "added chair (green)"
    checkpoint = session.checkpoints()[-1]
    assert "MCP calls are not undone by rollback" in checkpoint.label
    with pytest.raises(NothingToDo):
        session.approve()
    assert len(things.calls()) == 1  # exactly once


async def test_a_tool_that_claims_read_only_but_is_named_like_a_write_is_staged(
    things: Things, tmp_path: Path
) -> None:
    session = make_session(tmp_path)
    model, _ = await play(session, ("things_create_thing", {"name": "desk"}))
    assert things.calls() == []
    assert "Queued as step 1" in model.returned["things_create_thing"][0]
    assert [(op.tool, op.args) for op in mcp_steps(session)] == [("create_thing", {"name": "desk"})]


async def test_a_read_only_claim_with_a_read_name_is_believed_unless_a_rule_asks(
    things: Things, tmp_path: Path
) -> None:
    # The documented limit (docs/permissions.md): planbook cannot see that peek_thing writes.
    session = make_session(tmp_path)
    await play(session, ("things_peek_thing", {"name": "one"}))
    assert (tmp_path / "peeked.txt").read_text() == "one"
    assert mcp_steps(session) == []

    (tmp_path / "peeked.txt").unlink()
    things.rules = '[permissions]\nmcp = { "things.peek_*" = "ask" }'
    things.write()
    session = make_session(tmp_path)
    model, _ = await play(session, ("things_peek_thing", {"name": "two"}))
    assert not (tmp_path / "peeked.txt").exists()
    assert "Queued as step 1" in model.returned["things_peek_thing"][0]
    assert [c["arguments"]["name"] for c in things.calls()] == ["one"]


async def test_a_plan_changed_after_approval_refuses_the_changed_call(
    things: Things, tmp_path: Path
) -> None:
    session = make_session(tmp_path)
    await play(
        session,
        ("things_add_thing", {"name": "first"}),
        ("things_add_thing", {"name": "second"}),
    )

    def rewrite(step: dict[str, Any]) -> None:
        step["operation"]["arguments"] = json.dumps({"name": "everything"})

    after_first_step(session, rewrite)
    report = session.approve()
    assert report.stopped and "approval hash mismatch" in report.stopped
    assert [c["arguments"]["name"] for c in things.calls()] == ["first"]


async def test_rules_deny_ask_and_allow_by_server_tool_glob(things: Things, tmp_path: Path) -> None:
    things.rules = (
        "[permissions]\n"
        'mcp = { "things.fail_*" = "deny", "things.get_*" = "ask", "things.add_*" = "allow" }'
    )
    things.write()
    session = make_session(tmp_path)
    model, _ = await play(
        session,
        ("things_fail_thing", {"name": "x"}),
        ("things_get_thing", {"name": "y"}),
        ("things_add_thing", {"name": "z"}),
    )
    assert model.returned["things_fail_thing"][0].startswith("Refused by a permission rule")
    assert things.calls() == []  # deny refused, ask staged the read, plan mode staged the write
    assert [op.tool for op in mcp_steps(session)] == ["get_thing", "add_thing"]

    # Outside plan mode an allow rule runs the write at once, recorded as a step.
    session = make_session(tmp_path)
    model, _ = await play(session, ("things_add_thing", {"name": "z"}), mode="auto-edit")
    assert things.calls() == [{"tool": "add_thing", "arguments": {"name": "z", "colour": "red"}}]
    assert "added z (red)" in model.returned["things_add_thing"][0]
    plan = session.current_plan()
    assert plan is not None and plan.steps[-1].status == "done"


async def test_ask_mode_asks_and_the_approved_call_runs_once(
    things: Things, tmp_path: Path
) -> None:
    session = make_session(tmp_path)
    session.set_mode("ask")
    model = Model([("things_add_thing", {"name": "lamp"})])
    run = plan_task(session, "add a lamp", model=model.model())
    decision = await next_decision(session)
    assert "call things.add_thing" in decision.question and '"lamp"' in decision.question
    assert [s.label for s in scopes_for("mcp", "things.add_thing")] == [
        "this MCP tool (things.add_thing)",
        "every tool of things (things.*)",
    ]
    assert things.calls() == []  # waiting for the person: nothing sent
    decisions_of(session).answer(decision.id, "approve")
    await run
    assert run.status == "finished", run.error
    assert [c["tool"] for c in things.calls()] == ["add_thing"]
    assert "added lamp (red)" in model.returned["things_add_thing"][0]


async def test_a_failing_call_fails_its_step_with_the_tools_words(
    things: Things, tmp_path: Path
) -> None:
    session = make_session(tmp_path)
    await play(session, ("things_fail_thing", {"name": "sofa"}))
    report = session.approve()
    assert not report.ok
    plan = session.current_plan()
    assert plan is not None and plan.steps[0].status == "failed"
    assert "things.fail_thing answered with an error" in (plan.steps[0].error or "")
    assert "no room for sofa" in (plan.steps[0].error or "")


async def test_a_bad_server_entry_is_one_line_and_the_rest_works(
    things: Things, tmp_path: Path
) -> None:
    things.extra = (
        "[mcp.servers.broken]\ncomand = 'x'\n\n"
        "[mcp.servers.absent]\ncommand = 'no-such-program-planbook'\n"
    )
    things.write()
    session = make_session(tmp_path)
    model, run = await play(session, ("things_get_thing", {"name": "lamp"}))
    assert model.returned["things_get_thing"] == ["thing lamp is blue"]
    lines = errors(run)
    bad = [line for line in lines if "[mcp.servers.broken]" in line]
    assert len(bad) == 1 and "`comand`" in bad[0] and "\n" not in bad[0]
    absent = [line for line in lines if "MCP server absent" in line]
    assert len(absent) == 1 and "left out" in absent[0]
    assert not any(name.startswith(("broken_", "absent_")) for name in model.tools)


@pytest.fixture
def http_things(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Things]:
    """The same server over streamable HTTP on 127.0.0.1, a header's token from the env."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    project = Things(tmp_path)
    env = {**os.environ, "THINGS_LOG": str(project.log)}
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None and time.monotonic() < deadline, "no HTTP server"
            time.sleep(0.1)
        monkeypatch.setenv("THINGS_TOKEN", "s3cret")
        own_rules(
            tmp_path / "planbook.toml",
            "[mcp.servers.things]\n"
            f'url = "http://127.0.0.1:{port}/mcp"\n'
            'headers = { "X-Token" = "${THINGS_TOKEN}" }\n',
        )
        yield project
    finally:
        process.terminate()
        process.wait(10)


async def test_an_http_server_reads_at_once_and_runs_approved_writes(
    http_things: Things, tmp_path: Path
) -> None:
    session = make_session(tmp_path)
    model, run = await play(
        session, ("things_get_thing", {"name": "lamp"}), ("things_add_thing", {"name": "rug"})
    )
    assert errors(run) == []
    assert model.returned["things_get_thing"] == ["thing lamp is blue"]
    # the header went with the request, its token taken from the environment
    assert http_things.calls() == [
        {"tool": "get_thing", "arguments": {"name": "lamp", "token": "s3cret"}}
    ]
    assert session.approve().ok  # the executor's own connection sends it too
    assert http_things.calls()[1:] == [
        {"tool": "add_thing", "arguments": {"name": "rug", "colour": "red", "token": "s3cret"}}
    ]


def test_write_words_are_word_parts_of_the_name() -> None:
    assert word_parts("repo.createPullRequest") == ["repo", "create", "pull", "request"]
    assert looks_like_write("create_thing") and looks_like_write("pushFiles")
    assert not looks_like_write("dataset_info") and not looks_like_write("get_settings")
    assert runs_at_once("get_thing", {"readOnlyHint": True})
    assert not runs_at_once("get_thing", {"readOnlyHint": False})
    assert not runs_at_once("get_thing", None)
    assert not runs_at_once("delete_thing", {"readOnlyHint": True})


def test_the_documented_planbook_toml_loads(tmp_path: Path) -> None:
    from planbook.engine.mcp_servers import HttpServer, StdioServer, load_servers
    from planbook.engine.rules.matching import RuleSet

    page = (Path(__file__).parents[2] / "docs" / "mcp.md").read_text(encoding="utf-8")
    section = page.split("## planbook's agent as an MCP client", 1)[1]
    block = section.split("```toml\n", 1)[1].split("```", 1)[0]
    own_rules(tmp_path / "planbook.toml", block)
    servers, problems = load_servers(tmp_path)
    assert problems == []
    assert isinstance(servers["github"], HttpServer) and isinstance(servers["tracker"], StdioServer)
    rules = RuleSet.load(tmp_path)
    assert rules.decide("mcp", "github.create_issue") == "ask"
    assert rules.decide("mcp", "github.delete_repo") == "deny"
    assert rules.decide("mcp", "tracker.create_ticket") is None  # no rule: the gate decides
