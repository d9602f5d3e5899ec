"""What the attack tests share: the agent's tools called as a model would call them, and the
sender's session of a notebook someone else sends.

``tool_context`` gives the RunContext the agent's tools receive, bound to a real Session (its
rules, decisions and doom-loop guard as an agent run would set them up), with pydantic-ai's
TestModel: no model is asked anything, the tools run for real.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from pydantic_ai import RunContext
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import RunUsage

from planbook.agent.config import AgentConfig
from planbook.agent.context import AgentDeps, decisions_of
from planbook.documents.file import FileNotebook
from planbook.engine.doom_loop import DoomLoopGuard
from planbook.sessions.session import Session
from planbook.workspace.files import Workspace


def tool_context(session: Session) -> RunContext[AgentDeps]:
    """The context a tool call of an agent run on ``session`` gets."""
    deps = AgentDeps(
        session=session,
        config=AgentConfig(),
        decisions=decisions_of(session),
        rules=session.rules.current(),
        guard=DoomLoopGuard(limit=3),
        emit=lambda activity: None,
    )
    return RunContext(deps=deps, model=TestModel(), usage=RunUsage())


def sender_session(root: Path) -> tuple[Path, Session]:
    """``root/received.ipynb``, two code cells (c1, c2), and the session of the person who will
    send it: what they stage there travels with the file."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell("print(x)")]
    nb.cells[0]["id"], nb.cells[1]["id"] = "c1", "c2"
    path = root / "received.ipynb"
    nbformat.write(nb, path)
    return path, Session(FileNotebook(path), Workspace(root, protected=(path,)), notebook_path=path)
