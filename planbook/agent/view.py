"""How an agent run reads in a notebook: status, the latest activity, open questions.

Used by the live ``%plan`` output (a display handle updated in place) and by ``AgentRun``'s own
rich display, so ``run = await session.plan(...)`` shows the same thing.
"""

from __future__ import annotations

from typing import Protocol

from planbook.agent.activity import Activity
from planbook.agent.context import decisions_of
from planbook.present.safe import md_code, md_prose, md_text, visible
from planbook.sessions.session import Session


class Shown(Protocol):
    """What is shown of a run (``planbook.agent.run.AgentRun``)."""

    @property
    def session(self) -> Session: ...
    @property
    def status(self) -> str: ...
    @property
    def activity(self) -> list[Activity]: ...
    @property
    def error(self) -> str | None: ...


ICONS = {
    "status": "·",
    "tool": "→",
    "thinking": "…",
    "text": "»",
    "staged": "+",
    "decision": "?",
    "error": "!",
}
SHOWN = 25


def markdown(run: Shown) -> str:
    """The run as markdown: the model's lines keep their formatting but never HTML, links or
    images (``md_prose``); ids, options and errors are plain words or code."""
    lines = [f"**planbook agent** · {md_text(run.status)}"]
    for a in run.activity[-SHOWN:]:
        lines.append(f"- `{ICONS.get(a.type, '-')}` {md_prose(a.message, prefix='  ')}")
    for d in decisions_of(run.session).pending():
        choices = " / ".join(md_code(o) for o in d.options) or "free text"
        lines.append(
            f"\n**waiting for you ({md_text(d.id)}):** {md_prose(d.question)}  \n"
            f"answer with {md_code(f'%answer {d.id} <choice>')} ({choices}) or in the panel"
        )
    if run.error:
        lines.append(f"\n**{md_text(run.error)}**")
    return "\n".join(lines)


def text(run: Shown) -> str:
    """The run for a terminal; control characters in what the model sent show as escapes."""
    lines = [f"planbook agent: {run.status}"]
    lines += [f"  {ICONS.get(a.type, '-')} {a.message}" for a in run.activity[-SHOWN:]]
    for d in decisions_of(run.session).pending():
        lines.append(f"  waiting for you ({d.id}): {d.question} -> %answer {d.id} <choice>")
    if run.error:
        lines.append(f"  {run.error}")
    return visible("\n".join(lines))
