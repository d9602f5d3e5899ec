"""Keep long runs inside the model's context: prune old tool outputs, never the plan.

A pydantic-ai history processor. When the history grows beyond a budget (characters, a cheap
stand-in for tokens), the content of old tool returns is replaced by a one-line summary (tool,
size, first line); the call/return pairs stay, so the conversation stays well-formed. The newest
messages are never touched. The staged plan itself is not in this history at all: it is rendered
from the session into the instructions of every request (see ``build.py``), so pruning can never
lose it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, cast

from pydantic_ai import RunContext
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart

from planbook.agent.context import AgentDeps

KEEP_LAST = 6
_SMALL = 300


def history_size(messages: list[ModelMessage]) -> int:
    total = 0
    for message in messages:
        for part in message.parts:
            total += len(str(getattr(part, "content", "") or "")) + len(
                str(getattr(part, "args", "") or "")
            )
    return total


def summary_of(part: ToolReturnPart) -> str:
    text = str(part.content)
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")[:120]
    return (
        f"[pruned to save context: {part.tool_name} returned {len(text):,} chars, "
        f"starting {first!r}; call it again if you need it]"
    )


def prune(
    messages: list[ModelMessage], budget: int, keep_last: int = KEEP_LAST
) -> list[ModelMessage]:
    """Oldest tool outputs first, until the history fits the budget."""
    size = history_size(messages)
    if size <= budget:
        return messages
    out = list(messages)
    for i, message in enumerate(out[: max(len(out) - keep_last, 0)]):
        if not isinstance(message, ModelRequest):
            continue
        parts = []
        for part in message.parts:
            if isinstance(part, ToolReturnPart) and len(str(part.content)) > _SMALL:
                new = summary_of(part)
                size -= len(str(part.content)) - len(new)
                part = replace(cast(Any, part), content=new)
            parts.append(part)
        out[i] = replace(message, parts=parts)
        if size <= budget:
            break
    return out


def make_pruner(
    budget: int,
) -> Callable[[RunContext[AgentDeps], list[ModelMessage]], Awaitable[list[ModelMessage]]]:
    async def prune_history(
        ctx: RunContext[AgentDeps], messages: list[ModelMessage]
    ) -> list[ModelMessage]:
        before = history_size(messages)
        pruned = prune(messages, budget)
        if pruned is not messages:
            ctx.deps.say(
                "status",
                f"context: pruned old tool outputs ({before:,} -> {history_size(pruned):,} chars)",
            )
        return pruned

    return prune_history
