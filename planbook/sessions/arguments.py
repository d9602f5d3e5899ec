"""What a caller of the Python API passes, checked before anything is read or written: an
argument of the wrong type is a one-line `UsageMistake` that says what it takes. Unchecked,
``reason=1`` was a pydantic error calling itself a planbook bug, ``plan(task=1)`` an
AttributeError, and ``shell(b"ls")`` staged its step, then failed on it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import UnionType
from typing import Any

from planbook.errors import UsageMistake
from planbook.model.operations import AnyOperation
from planbook.model.plan import Plan, Step
from planbook.model.questions import PersonQuestion
from planbook.model.store import PlanbookState


def _given(value: object) -> str:
    """What was given, short enough for one line (a long string or list is not repeated)."""
    shown = repr(value)
    return f"a {type(value).__name__}" if len(shown) > 40 else f"{shown} (a {type(value).__name__})"


def text(value: Any, name: str) -> str:
    """``value`` when it is a str."""
    if not isinstance(value, str):
        raise UsageMistake(f"`{name}` is text (a str), not {_given(value)}")
    return value


def optional_text(value: Any, name: str) -> str | None:
    return None if value is None else text(value, name)


def flag(value: Any, name: str) -> bool:
    """``value`` when it is True or False (1 or "yes" would be a guess)."""
    if not isinstance(value, bool):
        raise UsageMistake(f"`{name}` is True or False, not {_given(value)}")
    return value


def shown_hashes(value: Any) -> str | Mapping[str, str] | None:
    """``approve(shown=...)``: the hash of the chosen steps, or each shown step's hash by id."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        return value
    raise UsageMistake(
        "`shown` is the hash of the chosen steps (`hash_of`) or each shown step's hash by id "
        f"(`step_hashes`), not {_given(value)}"
    )


def steps(value: Any) -> Sequence[Step]:
    """``value`` when it is a list or tuple of a plan's steps (``plan.steps``, or some of them)."""
    if isinstance(value, list | tuple) and all(isinstance(s, Step) for s in value):
        return value
    raise UsageMistake(f"`steps` is a list of a plan's steps (`plan.steps`), not {_given(value)}")


def optional_plan(value: Any) -> Plan | None:
    if value is None or isinstance(value, Plan):
        return value
    raise UsageMistake(f"`plan` is a plan (`pb.current_plan()`) or None, not {_given(value)}")


def _require(value: Any, kind: type | UnionType, name: str, what: str) -> None:
    """Refuse ``value`` unless it is a ``kind``, saying ``name`` is ``what``."""
    if not isinstance(value, kind):
        raise UsageMistake(f"`{name}` is {what}, not {_given(value)}")


def question(value: Any) -> None:
    """A question an MCP client asked (``pb.person_questions()``), else refused."""
    _require(value, PersonQuestion, "question", "a question (`pb.person_questions()`)")


def operation(value: Any) -> None:
    """An operation (a step's ``operation``), else refused."""
    _require(value, AnyOperation, "op", "an operation (a step's `operation`)")


def kind(value: Any) -> None:
    """A class (``attached``'s key), else refused."""
    _require(value, type, "kind", "a class")


def record(value: Any) -> None:
    """A notebook's planbook record (``pb.store.state``), else refused."""
    _require(value, PlanbookState, "state", "a notebook's record (`pb.store.state`)")
