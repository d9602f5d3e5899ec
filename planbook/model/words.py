"""Counted nouns in messages: "1 step", "2 steps", never "1 step(s)" or "only 1 pending steps"."""

from __future__ import annotations

from collections.abc import Sized

#: Nouns whose plural is not the singular plus "s".
_IRREGULAR = {"entry": "entries", "this": "these", "is": "are", "was": "were", "has": "have"}


def plural(noun: str, n: int) -> str:
    """``noun`` as it goes with ``n``: ``plural("step", 2)`` is "steps"."""
    if n == 1:
        return noun
    return _IRREGULAR.get(noun, noun + "s")


def count(n: int | Sized, noun: str, *, plural_form: str | None = None) -> str:
    """``count(3, "step")`` is "3 steps"; ``count([s], "pending step")`` is "1 pending step".

    For a phrase, the last word is the one that agrees: "code cell" becomes "code cells".
    """
    number = n if isinstance(n, int) else len(n)
    if number == 1:
        return f"{number} {noun}"
    if plural_form is not None:
        return f"{number} {plural_form}"
    head, _, last = noun.rpartition(" ")
    return f"{number} {head + ' ' if head else ''}{plural(last, number)}"
