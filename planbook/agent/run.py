"""An agent run as an asyncio task on the kernel's loop: the cell returns at once, Stop cancels.

``plan_task(session, task)`` is what ``await session.plan(task)`` and ``%plan "task"`` call. It
checks the model first (a clear one-line error when none is configured), opens a plan for the
task, and starts the run. The returned ``AgentRun`` can be awaited, stopped, and observed
(``activity`` lines; the same lines go to the session's events as ``agent_activity``).
Provider errors that survive the client's retries end the run with one clear line; the steps
staged so far stay in the plan.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from planbook.agent import view
from planbook.agent.activity import Activity
from planbook.agent.config import AgentConfig, resolve_model
from planbook.agent.context import AgentDeps, config_of, decisions_of
from planbook.agent.memory import Keeper, load_messages, recorded_answers, saved
from planbook.agent.state import AgentState, state_of
from planbook.engine.doom_loop import DoomLoopGuard
from planbook.errors import PlanbookError, RunStopped, UsageMistake
from planbook.model.conversation import Conversation
from planbook.model.events import Event
from planbook.sessions.session import Session

if TYPE_CHECKING:
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models import Model

_log = logging.getLogger(__name__)

RunStatus = Literal["starting", "running", "finished", "stopped", "failed"]
_KEEP = "the plan staged so far is kept"


class AgentRun:
    """One run of the agent. ``await run`` waits for it and returns it."""

    def __init__(
        self,
        session: Session,
        prompt: str | None,
        model: Model,
        config: AgentConfig,
        *,
        auto_answers: Sequence[str] = (),
        history: list[ModelMessage] | None = None,
        conversation: Conversation | None = None,
    ) -> None:
        self.session = session
        #: None: resume the history where it stopped (``%plan continue``).
        self.prompt = prompt
        self.history = history
        self.keeper = Keeper(session, conversation or Conversation())
        self.model = model
        self.config = config
        self.status: RunStatus = "starting"
        self.activity: list[Activity] = []
        self.output: str | None = None
        self.error: str | None = None
        self._listeners: list[Callable[[Activity], None]] = []
        self._auto_answers = list(auto_answers)
        self._task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return view.text(self)

    def _repr_markdown_(self) -> str:
        return view.markdown(self)

    # --- lifecycle ------------------------------------------------------------------------
    def start(self) -> AgentRun:
        """Start on the running loop (the kernel's); without one, starts on first await."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self
        self._task = loop.create_task(self._main(), name="planbook-agent")
        self._task.add_done_callback(self._settled)
        self.status = "running"
        return self

    def _settled(self, task: asyncio.Task[None]) -> None:
        # Cancelled before it even began: _main never got to record it.
        if task.cancelled() and not self.done():
            self.status = "stopped"
            self.error = f"stopped: {_KEEP}"

    def stop(self) -> None:
        """End the run now (between tool calls); open questions are withdrawn."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
        decisions_of(self.session).cancel_all()

    def done(self) -> bool:
        return self.status in ("finished", "stopped", "failed")

    async def wait(self) -> AgentRun:
        if self._task is None:
            self.start()
        assert self._task is not None
        try:
            await asyncio.shield(self._task)
        except asyncio.CancelledError:
            if not self._task.cancelled():
                # The cell awaiting the run was interrupted: that ends the run too.
                self.stop()
                raise
        return self

    def __await__(self) -> Generator[Any, None, AgentRun]:
        return self.wait().__await__()

    def on_activity(self, listener: Callable[[Activity], None]) -> None:
        self._listeners.append(listener)

    # --- the run --------------------------------------------------------------------------
    def _emit(self, activity: Activity) -> None:
        self.activity.append(activity)
        self.keeper.activity(activity)
        self.session.events.emit(
            Event(
                kind="agent_activity",
                message=activity.message,
                status=activity.type,
                data={"type": activity.type, **activity.data},
            )
        )
        for listener in list(self._listeners):
            try:
                listener(activity)
            except Exception:
                _log.exception("planbook: an activity listener failed")

    async def _main(self) -> None:
        # heavy: pydantic-ai (the agent extra)
        # heavy: pydantic-ai (the agent extra)
        # heavy: pydantic-ai (the agent extra)
        from pydantic_ai import Agent
        from pydantic_ai.messages import PartEndEvent
        from pydantic_ai.models.function import FunctionModel
        from pydantic_ai.settings import ModelSettings
        from pydantic_ai.usage import UsageLimits

        from planbook.agent.build import build_agent  # heavy: pydantic-ai

        session = self.session
        keeper = self.keeper
        conversation = keeper.conversation
        deps = AgentDeps(
            session=session,
            config=self.config,
            decisions=decisions_of(session),
            rules=session.rules.current(),
            guard=DoomLoopGuard(limit=self.config.doom_loop_limit),
            emit=self._emit,
            auto_answers=self._auto_answers,
            keeper=keeper,
            recorded=recorded_answers(session, conversation),
        )
        # Questions a previous kernel asked are asked again by the resumed calls (or answered
        # from what the person recorded since): the old entries go.
        conversation.decisions = []
        conversation.status = "running"
        if self.prompt is not None:
            conversation.prompt = self.prompt
        deps.say(
            "status",
            f"agent {'started' if self.prompt is not None else 'continues'} "
            f"({getattr(self.model, 'model_name', 'model')}, {session.mode} mode)",
        )
        keeper.flush()
        agent = build_agent(self.config)
        # A FunctionModel without a stream function (the scripted agent) cannot stream.
        streams = self.config.stream and not (
            isinstance(self.model, FunctionModel) and self.model.stream_function is None
        )
        history = self.history
        retries = ProviderRetries(deps)
        try:
            limits = UsageLimits(request_limit=self.config.max_requests)
            # The provider's client retries rate limits, 5xx and timeouts with backoff (and
            # honours retry-after); what still fails after that ends the run in one line.
            settings = ModelSettings(
                timeout=self.config.request_timeout, max_retries=self.config.provider_retries
            )
            async with agent.iter(
                self.prompt,
                deps=deps,
                model=self.model,
                message_history=history,
                usage_limits=limits,
                model_settings=settings,
            ) as run:
                async for node in run:
                    if streams and Agent.is_model_request_node(node):
                        # Streamed: thinking and text show as soon as each part is complete.
                        async with node.stream(run.ctx) as events:
                            async for event in events:
                                if isinstance(event, PartEndEvent):
                                    _show(deps, event.part)
                    elif not streams and Agent.is_call_tools_node(node):
                        for part in node.model_response.parts:
                            _show(deps, part)
                    if Agent.is_call_tools_node(node):
                        _unknown_tools(deps, node.model_response, run.ctx.deps.tool_manager.tools)
                    # Each step of the run is in the notebook before the next one starts.
                    state_of(session).history = run.all_messages()
                    keeper.messages(run.all_messages())
                    keeper.flush()
                assert run.result is not None
                self.output = run.result.output
                state_of(session).history = run.result.all_messages()
                keeper.messages(run.result.all_messages())
            self.status = "finished"
            deps.say("status", "agent finished")
        except asyncio.CancelledError:
            self.status = "stopped"
            self.error = f"stopped: {_KEEP}"
            self._emit(Activity(type="status", message=self.error))
        except RunStopped as exc:
            self.status = "stopped"
            self.error = f"{exc}; {_KEEP}"
            self._emit(Activity(type="status", message=self.error))
        except Exception as exc:
            self.status = "failed"
            self.error = provider_error_line(exc)
            self._emit(Activity(type="error", message=self.error))
            session.events.emit(Event(kind="error", message=self.error))
        finally:
            retries.close()
            decisions_of(session).cancel_all()
            conversation.status = (
                self.status if self.status in ("finished", "failed") else "stopped"
            )
            keeper.flush()


def _unknown_tools(deps: AgentDeps, response: Any, tools: dict[str, Any] | None) -> None:
    from planbook.agent.build import TOOL_NAMES  # heavy: pydantic-ai

    for part in response.tool_calls:
        if part.tool_name not in TOOL_NAMES and part.tool_name not in (tools or {}):
            deps.say(
                "error",
                f"the model called an unknown tool {part.tool_name!r}; it was told the tools "
                "that exist",
                tool=part.tool_name,
            )


class ProviderRetries(logging.Filter):
    """Shows the provider client's retries (429, 5xx, timeouts) as one activity line each.

    The OpenAI client logs each retry at INFO on ``openai._base_client``; for the run, that
    logger lets INFO through to this filter, which reports it and then drops what the logger
    would not have let through before, so nothing new reaches the person's log handlers."""

    def __init__(self, deps: AgentDeps) -> None:
        super().__init__()
        self.deps = deps
        self.logger = logging.getLogger("openai._base_client")
        self.before = self.logger.level
        self.threshold = self.logger.getEffectiveLevel()
        self.logger.addFilter(self)
        if self.threshold > logging.INFO:
            self.logger.setLevel(logging.INFO)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith("Retrying request"):
            self.deps.say("error", f"provider: {message[0].lower()}{message[1:]}")
        return record.levelno >= self.threshold

    def close(self) -> None:
        self.logger.removeFilter(self)
        self.logger.setLevel(self.before)


def _show(deps: AgentDeps, part: Any) -> None:
    # heavy: pydantic-ai (the agent extra)
    from pydantic_ai.messages import TextPart, ThinkingPart

    if isinstance(part, ThinkingPart) and part.content.strip():
        deps.say("thinking", _line(part.content))
    elif isinstance(part, TextPart) and part.content.strip():
        deps.say("text", _line(part.content))


def _line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def provider_error_line(exc: BaseException) -> str:
    """One line for whatever ended the run, saying that the plan is kept and what to do."""
    # heavy: pydantic-ai (the agent extra)
    from pydantic_ai.exceptions import (
        ModelAPIError,
        ModelHTTPError,
        UnexpectedModelBehavior,
        UsageLimitExceeded,
    )

    if isinstance(exc, ModelHTTPError):
        body = exc.body if isinstance(exc.body, dict) else {}
        detail = str(body.get("message") or body.get("error") or "")[:160]
        what = {429: "rate limit", 401: "authentication failed", 403: "forbidden"}.get(
            exc.status_code, "server error" if exc.status_code >= 500 else "request refused"
        )
        return (
            f"the model provider answered HTTP {exc.status_code} ({what}"
            + (f": {detail}" if detail else "")
            + f") after retries; {_KEEP}; "
            "try again later, or `%plan revise` to continue"
        )
    if isinstance(exc, ModelAPIError):
        return f"the model provider could not be reached ({_line(str(exc), 160)}); {_KEEP}"
    if isinstance(exc, UnexpectedModelBehavior):
        return f"the model kept making invalid calls ({_line(exc.message, 160)}); {_KEEP}"
    if isinstance(exc, UsageLimitExceeded):
        return f"the run hit its usage limit ({_line(str(exc), 160)}); {_KEEP}"
    if isinstance(exc, PlanbookError):
        return f"{exc}; {_KEEP}"
    return f"the agent run failed: {type(exc).__name__}: {_line(str(exc), 200)}; {_KEEP}"


def _model_and_answers(session: Session, model: Any) -> tuple[AgentConfig, Model, list[str]]:
    config = config_of(session)
    if model is not None:
        config = config.model_copy(update={"model": model})
    answers = list(getattr(config.model, "answers", ()) or ())
    return config, resolve_model(config), answers


#: What a run opens with: its prompt (None: go on from the history), the history, and the
#: conversation the notebook keeps.
Opening: TypeAlias = tuple[str | None, "list[ModelMessage] | None", Conversation]


def _start(session: Session, model: Any, begin: Callable[[AgentState], Opening]) -> AgentRun:
    """The one way a run starts (a task, a revision, ``%plan continue``): refused while one
    runs, and the model and the rules are checked (each failure one clear line) before ``begin``
    changes anything; ``begin`` then says what the run opens with."""
    state = state_of(session)
    if state.running():
        raise UsageMistake(
            "an agent run is in progress: wait for it, or stop it with "
            "`%plan stop` (or `run.stop()`)"
        )
    config, resolved, answers = _model_and_answers(session, model)
    session.rules.current()  # a broken rule file is reported now, in one line, not mid-run
    prompt, history, conversation = begin(state)
    run = AgentRun(
        session,
        prompt,
        resolved,
        config,
        auto_answers=answers,
        history=history,
        conversation=conversation,
    )
    state.run = run
    return run.start()


def plan_task(session: Session, task: str, *, model: Any = None) -> AgentRun:
    """Have the agent plan ``task``: opens a plan for it and starts the run (as a task)."""
    if not task.strip():
        raise UsageMistake('say what to do: `%plan "clean the sales frame"`')

    def begin(state: AgentState) -> Opening:
        plan = session.new_plan(task)  # refuses, with a clear line, when steps are still open
        if state.reviser is None:
            state.reviser = lambda feedback: revise_task(session, feedback)
        state.history = None  # a new task starts a fresh conversation; revisions go on with it
        return f"Task from the person: {task}", None, Conversation(plan_id=plan.id, task=task)

    return _start(session, model, begin)


def revise_task(session: Session, feedback: str, *, model: Any = None) -> AgentRun:
    """Start the next revision with the person's feedback and let the agent rework the plan."""

    def begin(_: AgentState) -> Opening:
        history, conversation = _history(session)
        revision = session.revise(feedback)
        prompt = (
            f"The person reviewed the plan and asks for changes: {feedback}\n"
            f"Revision {revision.number} starts as a copy of revision {revision.parent} (kept "
            "as it was). Withdraw or add steps as needed, then call present_plan again."
        )
        if history and _dangling_calls(history):
            # An interrupted run left calls unanswered: close them so a new prompt can follow.
            from pydantic_ai.messages import repair_messages  # heavy: pydantic-ai

            history = list(repair_messages(history))
        return prompt, history, conversation

    return _start(session, model, begin)


def _history(session: Session) -> tuple[list[ModelMessage] | None, Conversation]:
    """The conversation to go on with: this kernel's, else the one saved in the notebook."""
    conversation = saved(session) or Conversation()
    plan = session.current_plan()
    if conversation.plan_id is not None and plan is not None and conversation.plan_id != plan.id:
        conversation = Conversation(plan_id=plan.id, task=plan.task)  # another task's talk
    history = state_of(session).history
    if history is None and conversation.messages:
        history = load_messages(conversation.messages)
    return history, conversation.model_copy(deep=True)


def _dangling_calls(history: list[ModelMessage]) -> bool:
    # heavy: pydantic-ai (the agent extra)
    from pydantic_ai.messages import ModelResponse

    return bool(history) and isinstance(history[-1], ModelResponse) and bool(history[-1].tool_calls)


def continue_task(session: Session, *, model: Any = None) -> AgentRun:
    """``%plan continue``: resume the last run where it stopped (after a restart, a Stop, an
    error), with the answers the person recorded since."""
    from pydantic_ai.messages import ModelResponse  # heavy: pydantic-ai

    def begin(_: AgentState) -> Opening:
        history, conversation = _history(session)
        if not history and not conversation.prompt:
            raise UsageMistake(
                'there is no agent conversation to continue: start one with `%plan "task"`'
            )
        if (
            history
            and isinstance(history[-1], ModelResponse)
            and not history[-1].tool_calls
            and conversation.status == "finished"
        ):
            raise UsageMistake(
                "the agent's last run finished: nothing to continue; review the plan with "
                '`%plan`, or ask for changes with `%plan revise "..."`'
            )
        return (None if history else conversation.prompt), history, conversation

    return _start(session, model, begin)


def stop_run(session: Session) -> bool:
    """Stop the session's agent run, if one is running. True if there was one."""
    state = state_of(session)
    if state.run is None or not state.running():
        return False
    state.run.stop()
    return True
