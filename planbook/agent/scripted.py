"""A scripted agent: a fixed list of tool calls, played through the very same tools and policy.

For teaching (show plan mode against act mode offline) and for notebooks validated with nbval.
Under the hood it is a pydantic-ai ``FunctionModel`` that answers each model request with the
next call of the script (after an optional delay), and ends with a short text. A string argument
``"$new_cell"`` stands for the id of the cell inserted by the latest ``insert_cell`` step
(``"$new_cell_1"`` for the first one), and ``"$step"`` / ``"$step_2"`` for step ids (to link
todos), since ids are only known once a step is staged.

A script plays a whole scenario across a kernel restart: the conversation saved in the notebook
says which calls were made, so ``%plan continue`` (with the same script configured again) goes
on with the next one. Asked to summarise the conversation, it answers with a plain list of the
calls made so far.

    Scripted([
        ("list_cells", {}),
        ("insert_cell", {"source": "df = df.dropna()", "reason": "drop empty rows"}),
        Call("run_cell", {"cell_id": "$new_cell", "reason": "see the result"}, delay=1.0),
        ("present_plan", {"summary": "Drop empty rows, then look at the frame."}),
    ], answers=["approve"])
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from planbook.agent.history import SUMMARY_MARK

__all__ = ["Call", "Scripted"]

_NEW_CELL = re.compile(r"new cell id (\w+)")
_STEP = re.compile(r"step id (\w+)")


@dataclass(frozen=True)
class Call:
    """One tool call of the script."""

    tool: str
    args: dict[str, Any] | str = field(default_factory=dict)
    #: Seconds to wait before making the call (for a demo that unfolds at a readable pace).
    delay: float = 0.0


ScriptItem = Call | tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], float]


def _as_call(item: ScriptItem) -> Call:
    if isinstance(item, Call):
        return item
    if len(item) == 3:
        return Call(item[0], item[1], float(item[2]))
    return Call(item[0], item[1])


@dataclass
class Scripted:
    """A fixed script of tool calls; pass it as the model (``Planbook.model`` or ``model=``)."""

    calls: Sequence[ScriptItem]
    #: The text the run ends with.
    final: str = "Scripted run finished."
    #: Answers to decision points, in order (approve / deny / continue / an option), so a demo
    #: in ask mode runs without anyone clicking. With none, decisions wait for the person.
    answers: Sequence[str] = ()
    model_name: str = "scripted"

    def to_model(self) -> FunctionModel:
        """A model playing the script from where the conversation it is given stands.

        Each call it makes carries an id naming this script and the call's place in it, so a
        conversation restored after a kernel restart (``%plan continue``) goes on with the next
        call instead of starting over. Asked to summarise, it answers with a plain list of the
        calls made so far."""
        calls = [_as_call(c) for c in self.calls]
        final = self.final
        prefix = f"pb-{_script_id(calls)}-"

        async def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if _asks_for_summary(messages):
                return ModelResponse(parts=[TextPart(_plain_summary(messages))])
            index = _next_index(messages, prefix)
            if index >= len(calls):
                return ModelResponse(parts=[TextPart(final)])
            call = calls[index]
            if call.delay:
                await asyncio.sleep(call.delay)
            args = _substitute(call.args, _ids_so_far(messages))
            return ModelResponse(
                parts=[ToolCallPart(call.tool, args, tool_call_id=f"{prefix}{index}")]
            )

        return FunctionModel(play, model_name=self.model_name)


def _script_id(calls: list[Call]) -> str:

    return hashlib.sha256(repr(calls).encode()).hexdigest()[:8]


def _next_index(messages: list[ModelMessage], prefix: str) -> int:
    played = [
        int(part.tool_call_id.removeprefix(prefix))
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart) and part.tool_call_id.startswith(prefix)
    ]
    return max(played, default=-1) + 1


def _asks_for_summary(messages: list[ModelMessage]) -> bool:
    last = messages[-1] if messages else None
    return isinstance(last, ModelRequest) and any(
        isinstance(p, UserPromptPart) and str(p.content).startswith(SUMMARY_MARK)
        for p in last.parts
    )


def _plain_summary(messages: list[ModelMessage]) -> str:
    text = "\n".join(str(p.content) for p in messages[-1].parts if isinstance(p, UserPromptPart))
    calls = [line for line in text.splitlines() if line.startswith("AGENT calls ")]
    return f"The agent made {len(calls)} tool call(s) so far: " + "; ".join(
        line.removeprefix("AGENT calls ").split("(")[0] for line in calls
    )


def _ids_so_far(messages: list[ModelMessage]) -> dict[str, list[str]]:
    """Cell ids and step ids the tools have answered with so far, in order."""
    found: dict[str, list[str]] = {"$new_cell": [], "$step": []}
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, ToolReturnPart):
                    text = str(part.content)
                    found["$new_cell"] += _NEW_CELL.findall(text)
                    found["$step"] += _STEP.findall(text)
    return found


def _substitute(args: Any, ids: dict[str, list[str]]) -> Any:
    """Replace "$new_cell" / "$step" (the latest) and "$new_cell_2" / "$step_1" (by order)."""
    if isinstance(args, dict):
        return {k: _substitute(v, ids) for k, v in args.items()}
    if isinstance(args, list):
        return [_substitute(v, ids) for v in args]
    if isinstance(args, str) and args.startswith("$"):
        for name, seen in ids.items():
            if args.startswith(name) and seen:
                suffix = args.removeprefix(name).lstrip("_")
                if not suffix:
                    return seen[-1]
                if suffix.isdigit() and 1 <= int(suffix) <= len(seen):
                    return seen[int(suffix) - 1]
    return args
