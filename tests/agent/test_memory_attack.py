"""Attacks on what the agent keeps: any history compacts into one a provider accepts; damaged
saved messages give one line and lose nothing; kernels writing rules at once keep every rule."""

from __future__ import annotations

import tomllib
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

import planbook
from planbook.agent.history import replace_head, start_points
from planbook.agent.memory import compact, dump_messages, load_messages
from planbook.agent.run import continue_task, revise_task
from planbook.agents import Scripted
from planbook.documents.file import FileNotebook
from planbook.errors import MetadataError
from planbook.workspace.files import Workspace

# One turn: the model answers with text, or calls 1-3 tools whose returns (of some size) follow.
turns = st.lists(
    st.one_of(
        st.builds(lambda n: ("text", n), st.integers(1, 3000)),
        st.builds(
            lambda sizes: ("tools", sizes), st.lists(st.integers(0, 20_000), min_size=1, max_size=3)
        ),
    ),
    min_size=1,
    max_size=25,
)


def conversation(spec: list[tuple[str, object]]) -> list[ModelMessage]:
    messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("the task")])]
    for i, (kind, what) in enumerate(spec):
        if kind == "text":
            messages.append(ModelResponse(parts=[TextPart("t" * int(what))]))  # type: ignore[call-overload]
            messages.append(ModelRequest(parts=[UserPromptPart("go on")]))
        else:
            sizes = list(what)  # type: ignore[call-overload]
            ids = [f"c{i}-{j}" for j in range(len(sizes))]
            messages.append(
                ModelResponse(
                    parts=[ToolCallPart("read_file", {"path": "x"}, tool_call_id=c) for c in ids]
                )
            )
            messages.append(
                ModelRequest(
                    parts=[
                        ToolReturnPart("read_file", "r" * size, tool_call_id=c)
                        for c, size in zip(ids, sizes, strict=True)
                    ]
                )
            )
    return messages


def well_formed(messages: list[ModelMessage]) -> None:
    assert isinstance(messages[0], ModelRequest)
    called: set[str] = set()
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                called.add(part.tool_call_id)
            if isinstance(part, ToolReturnPart):
                assert part.tool_call_id in called, "a tool return without its call"
    assert load_messages(dump_messages(messages)) == messages  # round-trips through the notebook


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns, st.integers(2_000, 120_000))
def test_any_history_compacts_into_a_well_formed_one(
    spec: list[tuple[str, object]], budget: int
) -> None:
    messages = conversation(spec)
    out = compact(messages, budget)
    well_formed(out)
    if out is not messages:
        assert out[-1] == messages[-1] or isinstance(out[-1], ModelRequest)
    for start in start_points(messages):
        well_formed(replace_head(messages, start, "note"))


def notebook_with(tmp_path: Path, conversation_raw: dict[str, object]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["planbook"] = {
        "schema_version": 1,
        "plans": [{"id": "p1", "task": "t", "state": "drafting"}],
        "conversation": conversation_raw,
    }
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.mark.anyio
@pytest.mark.parametrize(
    "messages",
    [[{"kind": "nonsense"}], [{"kind": "request", "parts": [{"part_kind": "user-prompt"}]}]],
)
async def test_damaged_saved_messages_give_one_line_and_change_nothing(
    tmp_path: Path, messages: list[dict[str, object]]
) -> None:
    path = notebook_with(
        tmp_path, {"plan_id": "p1", "task": "t", "status": "running", "messages": messages}
    )
    before = path.read_bytes()
    session = planbook.Session(FileNotebook(path), Workspace(tmp_path), notebook_path=path)
    for attempt in (
        lambda: continue_task(session, model=Scripted([])),
        lambda: revise_task(session, "again", model=Scripted([])),
    ):
        with pytest.raises(MetadataError) as info:
            attempt()
        assert "saved messages are damaged" in str(info.value) and "\n" not in str(info.value)
    assert path.read_bytes() == before


APPEND = """
import sys
from planbook.engine.rules.matching import RuleSet
root, who = sys.argv[1], sys.argv[2]
rules = RuleSet.load(root)
for n in range(5):
    rules.add("shell", f"tool-{who}-{n}*", "allow", persist=True, comment=f"kernel {who}")
"""


def test_kernels_writing_rules_at_once_keep_every_rule(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    (tmp_path / "planbook.toml").write_text("# shared rules\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    workers = [
        subprocess.Popen([sys.executable, "-c", APPEND, str(tmp_path), str(w)], env=env)
        for w in range(4)
    ]
    assert [w.wait(timeout=120) for w in workers] == [0, 0, 0, 0]
    text = (tmp_path / "planbook.toml").read_text()
    patterns = sorted(r["pattern"] for r in tomllib.loads(text)["rules"])
    assert patterns == sorted(f"tool-{w}-{n}*" for w in range(4) for n in range(5))
    assert text.startswith("# shared rules\n") and text.count("# kernel ") == 20
