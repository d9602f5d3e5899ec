"""The agent's pieces of the magics: ``%plan "task"``, ``%%plan``, ``%plan revise``, ``%plan
stop``, ``%answer`` and ``%config Planbook.model = ...``.

planbook/magics.py owns ``%plan``; it calls ``start_plan``, ``revise_plan`` and ``stop_plan``
here, and ``register(ipython)`` adds the rest (the ``Planbook`` configurable, the ``%%plan`` cell
magic and ``%answer``). The run streams into a live output (a display handle updated in place),
so the cell returns at once and the activity keeps appearing under it.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from traitlets import Any as AnyTrait
from traitlets import Bool, Unicode, observe
from traitlets.config import Configurable

from planbook.agent import view
from planbook.agent.config import config_of
from planbook.agent.context import Activity, decisions_of
from planbook.agent.run import AgentRun, plan_task, revise_task, stop_run

if TYPE_CHECKING:
    from planbook.session import Session

__all__ = ["Planbook", "answer_line", "register", "revise_plan", "start_plan", "stop_plan"]


class LiveView:
    """What the %plan output shows while (and after) the agent runs."""

    def __init__(self, run: AgentRun) -> None:
        self.run = run
        self._handle: Any = None

    def _repr_markdown_(self) -> str:
        return view.markdown(self.run)

    def __repr__(self) -> str:
        return view.text(self.run)

    def show(self) -> None:
        try:
            from IPython.display import display
        except ImportError:
            return
        self._handle = display(self, display_id=True)  # type: ignore[no-untyped-call]
        self.run.on_activity(self._update)

    def _update(self, _: Activity) -> None:
        if self._handle is not None:
            self._handle.update(self)


def start_plan(session: Session, task: str, *, show: bool = True) -> AgentRun:
    """``%plan "task"``: start the agent on the kernel's loop and show its live output."""
    run = plan_task(session, task)
    session.extras["revise_with_agent"] = lambda feedback: revise_plan(session, feedback)
    if show:
        LiveView(run).show()
    return run


def revise_plan(session: Session, feedback: str, *, show: bool = True) -> AgentRun:
    """``%plan revise "feedback"`` with an agent configured: the agent makes the next revision."""
    run = revise_task(session, feedback)
    if show:
        LiveView(run).show()
    return run


def stop_plan(session: Session) -> str:
    """``%plan stop``: end the agent run (the staged plan is kept)."""
    stopped = stop_run(session)
    return (
        "planbook: agent stopped; the plan staged so far is kept"
        if stopped
        else ("planbook: no agent run is in progress")
    )


def answer_line(session: Session, line: str) -> str:
    """``%answer``: list open decisions; ``%answer d3 approve``, ``%answer d3 deny "why"``,
    ``%answer d3 2`` (by number), ``%answer d3 edit {"content": "..."}``."""
    import json

    from planbook.errors import UsageMistake

    decisions = decisions_of(session)
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageMistake(f"cannot parse `{line}`: {exc}") from None
    if not words:
        pending = decisions.pending()
        if not pending:
            return "planbook: no open decision"
        return "\n".join(
            f"{d.id}: {d.question} [{' / '.join(d.options) or 'free text'}]" for d in pending
        )
    if len(words) < 2:
        raise UsageMistake("usage: `%answer <id> <choice> [reason or edited arguments]`")
    decision_id, choice, rest = words[0], words[1], " ".join(words[2:]) or None
    picked: str | int = int(choice) if choice.isdigit() else choice
    args = None
    if rest and choice == "edit":
        try:
            args = json.loads(rest)
        except ValueError:
            raise UsageMistake(
                'edited arguments are JSON: `%answer d1 edit {"content": "..."}`'
            ) from None
        rest = None
    answer = decisions.answer(decision_id, picked, text=rest, args=args)
    return f"planbook: {decision_id} -> {answer.choice}"


class Planbook(Configurable):
    """``%config Planbook.model = "openai:gpt-4.1"`` (or an OpenAI-compatible URL)."""

    model = AnyTrait(
        None,
        allow_none=True,
        help="Model string, OpenAI-compatible URL "
        "(http://host/v1#model), or a pydantic-ai Model / planbook.agents.Scripted.",
    ).tag(config=True)
    base_url = Unicode(None, allow_none=True, help="OpenAI-compatible endpoint.").tag(config=True)
    stream = Bool(True, help="Stream model responses when possible.").tag(config=True)

    @observe("model", "base_url", "stream")
    def _apply(self, change: dict[str, Any]) -> None:
        import planbook

        config = config_of(planbook.session())
        setattr(config, change["name"], change["new"])


def register(ipython: Any) -> None:
    """Add the agent's magics and configurable to an IPython shell."""
    from IPython.core.error import UsageError

    import planbook
    from planbook.errors import PlanbookError

    if not any(type(c).__name__ == "Planbook" for c in ipython.configurables):
        ipython.configurables.append(Planbook(parent=ipython))

    def plan_cell(line: str, cell: str) -> None:
        """%%plan: the cell's text is the task for the agent (it runs in the background)."""
        task = (line + "\n" + cell).strip()
        try:
            start_plan(planbook.session(), task)
        except PlanbookError as exc:
            raise UsageError(str(exc)) from None

    def answer(line: str) -> None:
        """%answer [id choice [reason]]: answer a question the agent is waiting on."""
        try:
            print(answer_line(planbook.session(), line))
        except PlanbookError as exc:
            raise UsageError(str(exc)) from None

    ipython.register_magic_function(plan_cell, magic_kind="cell", magic_name="plan")
    ipython.register_magic_function(answer, magic_kind="line", magic_name="answer")
