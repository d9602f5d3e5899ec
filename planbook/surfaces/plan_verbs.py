"""``%plan``'s verbs as data: one table gives the dispatch, the help ``%plan?`` shows and the
usage line a mistake names, so the three cannot drift apart (docs/magics-and-api.md lists the
same table, and a test holds them equal).

``%plan`` alone shows the plan; ``%plan VERB ...`` runs a verb; anything else is a task for the
agent (one bare word is refused instead: it is far more likely a mistyped verb).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path

from IPython.core.error import UsageError
from IPython.display import display

from planbook.agent.state import state_of
from planbook.model.cell import Cell, first_line, short_ids, tags_of
from planbook.model.words import count
from planbook.present.text import preview_lines
from planbook.sessions.page_advice import NO_SAVED_CELLS
from planbook.surfaces import api
from planbook.surfaces.api import NotebookSession
from planbook.surfaces.magics_agent import (
    continue_plan,
    conversation_text,
    revoke_rule,
    rules_text,
    start_plan,
    stop_plan,
)
from planbook.surfaces.say import say


@dataclass(frozen=True)
class Verb:
    """One ``%plan`` verb: what it is called, what it takes, what it does, who does it."""

    #: The word after ``%plan``.
    name: str
    #: Its arguments as the help shows them (``N``, ``A B``, ``[K]``), or "" for none.
    arguments: str
    #: One line for ``%plan?`` and the docs: what the verb does.
    help: str
    #: Carries it out with the words after the verb; a mistake raises ``UsageError``.
    run: Callable[[NotebookSession, list[str]], None]

    @property
    def usage(self) -> str:
        return f"%plan {self.name} {self.arguments}".rstrip()


def show_plan(session: NotebookSession) -> None:
    """The review panel where widgets render; its bundle carries the plan as markdown and
    text for everywhere else. The agent's saved conversation follows when there is one."""
    session.page_advice.refresh()
    session.mark_shown("magics")  # what `%approve` compares with (a step changed since: refused)
    display(session.review())  # type: ignore[no-untyped-call]
    conversation = conversation_text(session)
    if conversation:
        say(conversation)


def cells_listing(cells: list[Cell]) -> str:
    """``%plan cells``: what a person needs to name a cell (#N, short id or tag)."""
    if not cells:
        return "the notebook has no cells"
    short = short_ids([c.id for c in cells])
    width = max(len(s) for s in short.values())
    lines = []
    for n, cell in enumerate(cells, start=1):
        tags = "".join(f" [{t}]" for t in tags_of(cell))
        kind = "" if cell.cell_type == "code" else f" ({cell.cell_type})"
        lines.append(
            f"#{n:<3} {short[cell.id]:<{width}}{kind}{tags}  {first_line(cell.source, 70)}"
        )
    lines.append("name a cell by position (#3), id (or its first characters) or tag")
    return "\n".join(lines)


# --- mistakes: one line naming the token and the usage the table gives ------------------------


def misuse(verb: str, token: str | None, why: str) -> UsageError:
    """``%plan verb`` was given something it cannot take: ``token`` (in backticks) ``why``."""
    said = f"`{token}` {why}" if token is not None else why
    return UsageError(f"{said}: usage: `{VERBS_BY_NAME[verb].usage}`")


def _words(verb: str, words: list[str], least: int, most: int) -> list[str]:
    if len(words) > most:
        raise misuse(verb, words[most], f"is more than `%plan {verb}` takes")
    if len(words) < least:
        raise misuse(verb, None, f"`%plan {verb}` needs {VERBS_BY_NAME[verb].arguments}")
    return words


def _number(verb: str, token: str, what: str) -> int:
    try:
        return int(token)
    except ValueError:
        raise misuse(verb, token, f"is not a {what}") from None


def unknown_verb(word: str) -> UsageError:
    """A bare word that is no verb: the closest verb, or all of them, and how to ask the agent."""
    close = get_close_matches(word, VERBS_BY_NAME, n=1)
    hint = f"did you mean `%plan {close[0]}`?" if close else "verbs: " + ", ".join(VERBS_BY_NAME)
    agent = f'to ask the agent, quote the task: %plan "{word}"'
    return UsageError(f"`{word}` is not a %plan command ({hint}); {agent}")


# --- the verbs ---------------------------------------------------------------------------------


def _show(session: NotebookSession, words: list[str]) -> None:
    _words("show", words, 0, 0)
    show_plan(session)


def _text(session: NotebookSession, words: list[str]) -> None:
    _words("text", words, 0, 0)
    say(session.render_text(shown_to="magics"))


def _set_mode(verb: str, mode_name: str) -> Callable[[NotebookSession, list[str]], None]:
    def set_mode(session: NotebookSession, words: list[str]) -> None:
        _words(verb, words, 0, 0)
        mode = session.set_mode(mode_name)
        say(
            f"planbook: mode {mode}"
            + (
                " (changes are staged for your approval)"
                if mode == "plan"
                else " (changes apply at once, each with a checkpoint)"
            )
        )

    return set_mode


def _revise(session: NotebookSession, words: list[str]) -> None:
    if not words:
        raise UsageError('say what should change: `%plan revise "use a bar chart"`')
    feedback = " ".join(words)
    revise = state_of(session).reviser
    if revise is not None:
        revise(feedback)
    else:
        revision = session.revise(feedback)
        say(f"revision {revision.number} started from {revision.parent}: {feedback}")


def _skip(session: NotebookSession, words: list[str]) -> None:
    (token,) = _words("skip", words, 1, 1)
    number = _number("skip", token, "step number")
    say(f"step {number} is {session.skip(number).status}")


def _preview(session: NotebookSession, words: list[str]) -> None:
    (token,) = _words("preview", words, 1, 1)
    number = _number("preview", token, "step number")
    say("\n".join(preview_lines(session.preview(number))))


def _unskip(session: NotebookSession, words: list[str]) -> None:
    (token,) = _words("unskip", words, 1, 1)
    number = _number("unskip", token, "step number")
    say(f"step {number} is {session.unskip(number).status}")


def _move(session: NotebookSession, words: list[str]) -> None:
    first, where, second = _words("move", words, 3, 3)
    if where not in ("before", "after"):
        raise misuse("move", where, "is neither before nor after")
    number, other = _number("move", first, "step number"), _number("move", second, "step number")
    session.move(number, before=other if where == "before" else other + 1)
    show_plan(session)


def _history(session: NotebookSession, words: list[str]) -> None:
    _words("history", words, 0, 0)
    say(session.history())


def _diff(session: NotebookSession, words: list[str]) -> None:
    first, second = _words("diff", words, 2, 2)
    older, newer = _number("diff", first, "revision"), _number("diff", second, "revision")
    say(session.diff_revisions(older, newer))


def _cells(session: NotebookSession, words: list[str]) -> None:
    _words("cells", words, 0, 0)
    cells = session.cells()
    unsaved = not cells and session.page_advice.flagged()
    say(NO_SAVED_CELLS if unsaved else cells_listing(cells))


def _restore(session: NotebookSession, words: list[str]) -> None:
    (token,) = _words("restore", words, 1, 1)
    revision = session.restore_revision(_number("restore", token, "revision number"))
    say(
        f"planbook: revision {revision.number} restores revision {token} "
        f"({len(revision.steps)} steps); the revisions in between are kept"
    )


def _panel(session: NotebookSession, words: list[str]) -> None:
    _words("panel", words, 0, 0)
    display(session.review())  # type: ignore[no-untyped-call]


def _stop(session: NotebookSession, words: list[str]) -> None:
    _words("stop", words, 0, 0)
    say(stop_plan(session))


def _continue(session: NotebookSession, words: list[str]) -> None:
    _words("continue", words, 0, 0)
    continue_plan(session)


def _rules(session: NotebookSession, words: list[str]) -> None:
    if not words:
        say(rules_text(session))
        return
    if words[0] != "revoke":
        raise misuse("rules", words[0], "is not `revoke`")
    _, token = _words("rules", words, 2, 2)
    say(revoke_rule(session, _number("rules", token, "rule number")))


def _trust(session: NotebookSession, words: list[str]) -> None:
    _words("trust", words, 0, 0)
    lines = session.trust()
    say("\n".join(f"planbook: {line}" for line in lines) or "planbook: nothing new to trust here")


def _takeover(session: NotebookSession, words: list[str]) -> None:
    tokens = _words("takeover", words, 1, 2)
    if len(tokens) == 2 and tokens[1] != "--yes":
        raise misuse("takeover", tokens[1], "is not `--yes`")
    number = _number("takeover", tokens[0], "step number")
    taken = session.take_over(number, confirm=len(tokens) == 2)
    if taken.done:
        say(f"planbook: {taken.line}")
    else:
        say(f"planbook: {taken.line}. Confirm with `%plan takeover {number} --yes`")


def _gc(session: NotebookSession, words: list[str]) -> None:
    tokens = _words("gc", words, 0, 1)
    keep = _number("gc", tokens[0], "number of checkpoints to keep") if tokens else None
    say(f"planbook: {session.gc(keep_checkpoints=keep)}")


def _reset(session: NotebookSession, words: list[str]) -> None:
    tokens = _words("reset", words, 0, 1)
    if tokens and tokens[0] != "--force":
        raise misuse("reset", tokens[0], "is not `--force`")
    if state_of(session).running():
        raise UsageError("the agent is still running: stop it first with `%plan stop`")
    undone = session.reset(force=bool(tokens))
    undid = f"undid {count(undone, 'step')} still in effect; " if undone else ""
    print(f"planbook: started over: {undid}no plan, no checkpoint, mode plan")


def _use(session: NotebookSession, words: list[str]) -> None:
    tokens = _words("use", words, 0, 1)
    if tokens and not tokens[0].endswith(".ipynb"):
        raise misuse("use", tokens[0], "is not a notebook (a path ending in .ipynb)")
    if tokens and not Path(tokens[0]).expanduser().is_file():
        raise misuse("use", tokens[0], "is not a notebook file here")
    notebook = Path(tokens[0]).expanduser() if tokens else None
    now = api.session(notebook, kernel=True)
    print(f"planbook: the magics and the in-cell review act on {now.document.description}")


#: Every verb, in the order ``%plan?`` and the docs list them.
VERBS: tuple[Verb, ...] = (
    Verb("show", "", "the plan, every step with its reason, risk and diff", _show),
    Verb("text", "", "the same as plain text", _text),
    Verb("on", "", "plan mode: changes are staged for your approval", _set_mode("on", "plan")),
    Verb(
        "off",
        "",
        "act mode: changes apply at once, each with a checkpoint",
        _set_mode("off", "act"),
    ),
    Verb("revise", '"feedback"', "start a new revision (the old one is kept)", _revise),
    Verb("skip", "N", 'leave step N out of "approve all"', _skip),
    Verb("unskip", "N", "put step N back", _unskip),
    Verb("preview", "N", "run shell step N once in an overlay: what it would change", _preview),
    Verb("move", "N before M", "reorder steps (`after M` works too)", _move),
    Verb("history", "", "the revisions", _history),
    Verb("diff", "A B", "what changed between revisions A and B", _diff),
    Verb("cells", "", "the cells: position (#N), short id, tags and first line", _cells),
    Verb("restore", "N", "make revision N current again (as a new revision)", _restore),
    Verb("panel", "", "the review panel (what `%plan` shows where widgets render)", _panel),
    Verb("stop", "", "end the agent's run (the plan staged so far is kept)", _stop),
    Verb("continue", "", "resume the agent's last run where it stopped", _continue),
    Verb("rules", "[revoke N]", "the permission rules; `revoke N` removes rule N", _rules),
    Verb(
        "trust",
        "",
        "trust this notebook after you moved it, and the allow rules of its project's files",
        _trust,
    ),
    Verb(
        "takeover",
        "N [--yes]",
        "settle step N, left running by a process on another host, so it can run again",
        _takeover,
    ),
    Verb("gc", "[K]", "keep the newest K checkpoints (default: keep_checkpoints)", _gc),
    Verb(
        "reset",
        "[--force]",
        "start over: undo every step still in effect, forget the plans and checkpoints",
        _reset,
    ),
    Verb(
        "use",
        "[NB]",
        "make NB the notebook the magics and the page act on (none: this kernel's own)",
        _use,
    ),
)
VERBS_BY_NAME: dict[str, Verb] = {verb.name: verb for verb in VERBS}

#: What ``%plan`` does with a quoted task: not a verb, but ``%plan?`` says it too.
TASK_USAGE = ('%plan "task"', "ask the configured agent to plan a task")


def help_text() -> str:
    """``%plan?``: the first line for ``%lsmagic``, then one line per verb, from the table."""
    rows = [("%plan", "the plan (as `%plan show`)")]
    rows += [(verb.usage, verb.help) for verb in VERBS]
    rows.append(TASK_USAGE)
    width = max(len(usage) for usage, _ in rows) + 2
    lines = [f"{usage:<{width}}{what}" for usage, what in rows]
    return "Show or change the plan, or ask the agent for one.\n\n" + "\n".join(lines) + "\n"


def run(session: NotebookSession, line: str) -> None:
    """``%plan`` with ``line``: show the plan, run a verb, or give the agent a task."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"cannot parse `{line}`: {exc}") from None
    if not words:
        show_plan(session)
        return
    verb = VERBS_BY_NAME.get(words[0])
    if verb is not None:
        verb.run(session, words[1:])
    elif len(words) == 1 and not line.strip().startswith(("'", '"')):
        raise unknown_verb(words[0])
    else:
        start_plan(session, line.strip().strip("\"'"))
