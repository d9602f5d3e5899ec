"""What every magic shares: the kernel's session (and, the first time, what it opened on), and
planbook's errors turned into one-line ``UsageError``s (IPython prints those without a
traceback)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from IPython.core.error import UsageError

from planbook.errors import PlanbookError
from planbook.model.words import count
from planbook.present.safe import visible
from planbook.surfaces import api
from planbook.surfaces.api import NotebookSession
from planbook.surfaces.say import say

#: Set when the magics are loaded (magics.py ``register``): the next magic says what the
#: kernel's session opened on, which ``%load_ext planbook`` no longer opens.
_announce = [False]


@contextmanager
def as_usage_errors() -> Iterator[None]:
    try:
        yield
    except PlanbookError as exc:
        raise UsageError(visible(str(exc))) from None


def kernel_session() -> NotebookSession:
    """The session the magics act on: the kernel's (planbook/surfaces/api.py). The first
    magic after loading says what it opened on first (``announce``)."""
    with as_usage_errors():
        session = api.session()
    if _announce[0]:
        _announce[0] = False
        announce(session)
    return session


def announce_at_first_use() -> None:
    _announce[0] = True


def announce(session: NotebookSession) -> None:
    """What opening the notebook found (repaired runs, warnings: stderr), then one line: the
    mode, the notebook and how, and the plan it held when it was opened."""
    for note in [*session.recovered, *session.warnings]:
        say(f"planbook: {note}", file=sys.stderr)
    restored = ""
    if session.opened_with is not None:
        plan_id, pending = session.opened_with
        restored = f" · plan {plan_id} restored with {count(pending, 'pending step')}"
    say(f"planbook: mode {session.mode} · notebook: {session.document.description}{restored}")


def unquote(text: str) -> str:
    """IPython's argument parser keeps the quotes of `--reason "two words"`; drop them."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text
