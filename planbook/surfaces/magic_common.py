"""What every magic shares: the kernel's session, and planbook's errors turned into one-line
``UsageError``s (IPython prints those without a traceback)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from IPython.core.error import UsageError

from planbook.errors import PlanbookError
from planbook.present.safe import visible
from planbook.surfaces import api
from planbook.surfaces.api import NotebookSession


@contextmanager
def as_usage_errors() -> Iterator[None]:
    try:
        yield
    except PlanbookError as exc:
        raise UsageError(visible(str(exc))) from None


def kernel_session() -> NotebookSession:
    """The session the magics act on: the kernel's (planbook/surfaces/api.py)."""
    with as_usage_errors():
        return api.session()


def unquote(text: str) -> str:
    """IPython's argument parser keeps the quotes of `--reason "two words"`; drop them."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text
