"""Keep long runs inside the model's context: summarise older turns, prune only as the fallback.

A pydantic-ai history processor. Past a configurable share of the model's context (measured in
characters / 4, a stand-in for tokens that needs no tokenizer), the older turns are replaced by
a summary written by the configured model itself; the newest turns stay as they were. The
history stays well-formed: it restarts at a model reply, after one request carrying the summary
(and the plan as it stands, since the plan is otherwise sent only as what changed). When the
model cannot summarise (an error, an empty answer), the old mechanical pruning is used: the
content of old tool returns becomes a one-line note, the call/return pairs stay.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

KEEP_LAST = 6
_SMALL = 300
#: A summary request starts with this line, so a scripted model can tell it apart.
SUMMARY_MARK = "[planbook: summarise the conversation so far]"
SUMMARY_INSTRUCTIONS = (
    "You compress an agent's working conversation so it can continue with less context. "
    "Write a short factual summary (at most 25 lines): the task, what was learned from the "
    "notebook and files (names, ids, shapes, numbers that matter), which steps were staged or "
    "withdrawn and why, what the person answered, and what remains to do. No preamble."
)
SUMMARY_HEAD = "Summary of the earlier conversation (older turns were summarised):\n"


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


def start_points(messages: list[ModelMessage]) -> list[int]:
    """Where a shortened history may restart after one note: at a model reply (the requests
    after it answer its tool calls), or at a request that carries only a prompt."""
    points = []
    for i, message in enumerate(messages):
        if isinstance(message, ModelResponse) or all(
            isinstance(p, UserPromptPart | SystemPromptPart) for p in message.parts
        ):
            points.append(i)
    return points


def replace_head(messages: list[ModelMessage], start: int, note: str) -> list[ModelMessage]:
    """``messages[start:]`` behind one request carrying ``note`` instead of what came before."""
    rest = list(messages[start:])
    if rest and isinstance(rest[0], ModelRequest):
        first = rest.pop(0)
        assert isinstance(first, ModelRequest)
        return [replace(first, parts=[UserPromptPart(note), *first.parts]), *rest]
    return [ModelRequest(parts=[UserPromptPart(note)]), *rest]


def transcript(messages: list[ModelMessage], per_part: int = 2000) -> str:
    """The turns as plain text for the summariser; long tool output cut to its start."""
    lines: list[str] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                lines.append(f"PERSON: {_cut(str(part.content), per_part)}")
            elif isinstance(part, ToolReturnPart):
                lines.append(f"TOOL {part.tool_name} -> {_cut(str(part.content), per_part)}")
            elif isinstance(part, RetryPromptPart):
                lines.append(f"RETRY: {_cut(str(part.content), 300)}")
            elif isinstance(part, ToolCallPart):
                lines.append(f"AGENT calls {part.tool_name}({_cut(part.args_as_json_str(), 600)})")
            elif isinstance(part, TextPart):
                lines.append(f"AGENT: {_cut(part.content, per_part)}")
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit:,} more]"


async def summarise(model: Any, messages: list[ModelMessage]) -> str:
    """Ask ``model`` for a summary of ``messages``; raises if it cannot give one."""
    from pydantic_ai.direct import model_request  # heavy: pydantic-ai (the agent extra)

    request = ModelRequest(
        parts=[UserPromptPart(f"{SUMMARY_MARK}\n{transcript(messages)}")],
        instructions=SUMMARY_INSTRUCTIONS,
    )
    response = await model_request(model, [request])
    text = "\n".join(p.content for p in response.parts if isinstance(p, TextPart)).strip()
    if not text:
        raise ValueError("the model answered the summary request without text")
    return text


def cut_for_summary(messages: list[ModelMessage], keep_chars: int) -> int:
    """The earliest restart point whose tail fits ``keep_chars`` (0: nothing can be cut)."""
    points = [p for p in start_points(messages) if 0 < p < len(messages) - 1]
    for point in points:
        if history_size(messages[point:]) <= keep_chars:
            return point
    return points[-1] if points else 0
