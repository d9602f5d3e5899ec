"""One permission rule (tool glob, pattern glob, action), and a bad rule in a person's words.

Shared by the matcher (``matching.py``: reading the files, deciding) and the writer (``file.py``:
changing planbook.toml with its comments kept), so neither needs the other's module to say
what a rule is.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Literal, get_args

from pydantic import ConfigDict, Field, ValidationError

from planbook.model.base import PlanbookModel

Action = Literal["allow", "ask", "deny"]
RULES_FILE = "planbook.toml"


class Rule(PlanbookModel):
    """One permission rule."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(min_length=1, description="Tool name or glob, such as `shell` or `*_file`.")
    pattern: str = Field(default="*", min_length=1, description="Glob on the path or command.")
    action: Action = Field(description="allow, ask or deny.")
    #: Where the rule was read from (file name and position), for messages.
    source: str = Field(default="", exclude=True, repr=False)
    #: An allow rule read from a file this person has not trusted (engine/rules/trusted.py):
    #: it acts as "ask", and never outweighs a deny.
    untrusted: bool = Field(default=False, exclude=True, repr=False)

    def matches(self, tool: str, target: str | None) -> bool:
        if not fnmatchcase(tool, self.tool):
            return False
        if target is None:
            return self.pattern == "*"
        return fnmatchcase(target, self.pattern)


def first_error(exc: ValidationError) -> str:
    """The first problem pydantic found, as the end of one line a person can act on."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "rule"
    if err["type"] == "literal_error":
        choices = ", ".join(get_args(Action))
        return f"{loc} must be one of {choices}, not {err.get('input')!r}"
    if err["type"] == "extra_forbidden":
        return f"unknown key {loc!r} (use tool, pattern and action)"
    if err["type"] == "missing":
        return f"missing {loc!r}"
    return f"{loc}: {err['msg']}"
