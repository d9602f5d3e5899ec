"""A kernel restart in the middle of a conversation: a real kernel, a notebook file, the real
pydantic-ai OpenAI client against the scripted server on 127.0.0.1. After the restart `%plan`
shows the conversation, `%answer` answers the question the dead kernel asked, and `%plan
continue` goes on from there with the whole conversation."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from tests.kernel_helper import kernel
from tests.support.openai_server import Reply, ScriptedOpenAI

pytestmark = pytest.mark.kernel

WAIT = (
    "import asyncio, planbook\nfrom planbook.agent.context import decisions_of\n"
    "while not decisions_of(planbook.session()).pending():\n"
    "    await asyncio.sleep(0.05)"
)


def test_a_restart_in_the_middle_of_a_conversation(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", id="first")]
    path = tmp_path / "analysis.ipynb"
    nbformat.write(nb, path)
    replies = [
        Reply(tool_calls=[("insert_cell", {"source": "y = x + 1", "reason": "add y"})]),
        Reply(tool_calls=[("ask_user", {"question": "Plot y too?", "options": ["yes", "no"]})]),
        Reply(tool_calls=[("present_plan", {"summary": "Add y; plot it as asked."})]),
        Reply(content="Ready for review."),
    ]
    with ScriptedOpenAI(replies) as api, kernel(tmp_path) as k:
        setup = (
            "%load_ext planbook\nimport planbook\n"
            f"session = planbook.session({str(path)!r}, kernel=True)\n"
            f"%config Planbook.model = '{api.base_url}#{api.model_name}'"
        )
        assert k.run(setup).status == "ok"
        started = k.run('%plan "add y"')
        assert started.status == "ok", started.text
        assert k.run(WAIT, timeout=60).status == "ok"
        assert len(api.requests) == 2

        k.restart()  # the kernel dies with the question open

        saved = json.loads(path.read_text())["metadata"]["planbook"]["conversation"]
        assert saved["status"] == "running"
        assert k.run(setup).status == "ok"
        shown = k.run("%plan text\n%plan")
        assert "interrupted" in shown.stdout and "Plot y too?" in shown.stdout, shown.text
        listed = k.run("%answer")
        assert listed.stdout.startswith("d1: Plot y too? [yes / no]"), listed.text
        answered = k.run("%answer d1 yes")
        assert "recorded" in answered.stdout, answered.text
        resumed = k.run(
            "%plan continue\nawait planbook.session().agent_run\n"
            "run = planbook.session().agent_run\n"
            "plan = planbook.session().current_plan()\n"
            "print(run.status, plan.state, [s.operation.kind for s in plan.steps])"
        )
        assert resumed.stdout.strip().endswith("finished awaiting_approval ['insert_cell']"), (
            resumed.text
        )

    assert len(api.requests) == 4
    # The request after the restart carries the whole conversation: the task, the staged
    # step's answer, and the person's answer to the question the dead kernel asked.
    messages = api.requests[2]["messages"]
    text = json.dumps(messages)
    assert "Task from the person: add y" in text
    assert "Queued as step 1" in text
    assert messages[-1]["role"] == "tool" and "The person answered: yes" in messages[-1]["content"]
    on_disk = nbformat.read(path, as_version=4)
    conversation = on_disk.metadata["planbook"]["conversation"]
    assert conversation["status"] == "finished" and conversation["decisions"] == []
    assert [c.source for c in on_disk.cells] == ["x = 1"]  # staged, not applied
