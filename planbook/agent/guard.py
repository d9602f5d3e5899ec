"""Around every tool call: the doom-loop guard, a one-line activity summary, and refusals.

A pydantic-ai capability (``wrap_tool_execute``), so the same checks hold for every tool and for
the scripted agent. It runs after argument validation: a malformed call never gets here, it goes
back to the model as a retry prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError
from pydantic_ai import ModelRetry, RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.capabilities.abstract import (
    RawToolArgs,
    ValidatedToolArgs,
    WrapToolExecuteHandler,
)
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import ToolDefinition

from planbook.agent.context import AgentDeps
from planbook.errors import PlanbookError, RunStopped, first_problem


def summarise_call(tool: str, args: dict[str, Any]) -> str:
    """``read_cell cell_id=ab12`` style, one line, long values cut."""
    shown = []
    for key, value in args.items():
        if key in ("source", "content", "edits", "todos", "summary"):
            text = f"<{len(str(value))} chars>"
        else:
            text = str(value).replace("\n", " ")
            text = text if len(text) <= 60 else text[:57] + "..."
        shown.append(f"{key}={text}")
    return f"{tool} " + " ".join(shown) if shown else tool


@dataclass
class Guard(AbstractCapability[AgentDeps]):
    """Doom-loop guard + activity + refusals as answers."""

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None

    async def on_tool_validate_error(
        self,
        ctx: RunContext[AgentDeps],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: RawToolArgs,
        error: ValidationError | ModelRetry,
    ) -> ValidatedToolArgs:
        # Shown, then sent back to the model as a retry prompt: it never reaches the plan.
        detail = (
            ": ".join(first_problem(error, whole="arguments"))
            if isinstance(error, ValidationError)
            else str(error)
        )
        ctx.deps.say("error", f"malformed {call.tool_name} call sent back to the model ({detail})")
        raise error

    async def wrap_tool_execute(
        self,
        ctx: RunContext[AgentDeps],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        deps = ctx.deps
        raw = call.args_as_dict()
        if not ctx.tool_call_approved:  # the re-run of an approved call is the same call
            deps.say("tool", summarise_call(call.tool_name, raw), tool=call.tool_name)
            loop = deps.guard.record(call.tool_name, raw)
            if loop is not None:
                deps.say(
                    "error",
                    f"doom loop: {call.tool_name} called {loop.count} times with "
                    "the same arguments; not executed",
                )
                answer = await deps.decide(
                    f"The agent called {call.tool_name} {loop.count} times with the same "
                    "arguments. Let it continue?",
                    ["continue", "stop"],
                    kind="doom_loop",
                    data={"tool": call.tool_name, "args": raw},
                    call_id=call.tool_call_id,
                )
                if answer.choice == "stop":
                    deps.stop_requested = True
                    raise RunStopped(f"stopped at your request after repeated {call.tool_name}")
                deps.guard.forgive(call.tool_name, raw)
                return loop.message
        try:
            return await handler(args)
        except PlanbookError as exc:
            # A refusal the model cannot fix by retrying (a deny rule, a conflict): tell it.
            deps.say("error", f"{call.tool_name}: {exc}")
            return f"Refused: {exc}"
