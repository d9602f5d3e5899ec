"""Permission rules: allow / ask / deny per tool, with glob patterns on paths and commands.

Where rules come from, in this order (a later rule beats an earlier one, "last match wins"):

1. ``[tool.planbook]`` in the project's ``pyproject.toml``;
2. ``planbook.toml`` next to it (top-level keys, same shape), where "always allow" from the
   panel is written, so the person's own pyproject.toml is never rewritten.

Two shapes are accepted in either file::

    [tool.planbook.permissions]          # compact: tool = action, or tool = {pattern = action}
    write_file = "ask"
    shell = { "git status*" = "allow", "rm *" = "deny" }

    [[tool.planbook.rules]]              # explicit, one table per rule (what `add` appends)
    tool = "edit_file"
    pattern = "notebooks/*.py"
    action = "allow"

``tool`` and ``pattern`` are ``fnmatch`` globs (``*`` also matches ``/``); the pattern is matched
against the step's target: a workspace-relative path, a shell command, or a cell id. A rule whose
pattern is ``*`` (the default) also matches a call that has no target.
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planbook.errors import PlanbookError
from planbook.model.operations import AnyOperation, target_of

Action = Literal["allow", "ask", "deny"]
RULES_FILE = "planbook.toml"


class RulesError(PlanbookError):
    """A rule file cannot be read; the message names the file, the rule and the fix."""


class Rule(BaseModel):
    """One permission rule."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str = Field(min_length=1, description="Tool name or glob, such as `shell` or `*_file`.")
    pattern: str = Field(default="*", min_length=1, description="Glob on the path or command.")
    action: Action = Field(description="allow, ask or deny.")
    #: Where the rule was read from (file name and position), for messages.
    source: str = Field(default="", exclude=True, repr=False)

    def matches(self, tool: str, target: str | None) -> bool:
        if not fnmatchcase(tool, self.tool):
            return False
        if target is None:
            return self.pattern == "*"
        return fnmatchcase(target, self.pattern)


@dataclass
class RuleSet:
    """The rules of one project, in precedence order (the last match wins)."""

    rules: list[Rule] = field(default_factory=list)
    #: Where `add(..., persist=True)` writes; None when the rule set is not tied to a project.
    root: Path | None = None

    @classmethod
    def load(cls, root: str | os.PathLike[str]) -> RuleSet:
        """Read pyproject.toml's ``[tool.planbook]`` and then planbook.toml in ``root``."""
        base = Path(root)
        rules: list[Rule] = []
        pyproject = base / "pyproject.toml"
        if pyproject.is_file():
            section = _read_toml(pyproject).get("tool", {}).get("planbook", {})
            rules += _parse_section(section, "pyproject.toml [tool.planbook]")
        own = base / RULES_FILE
        if own.is_file():
            rules += _parse_section(_read_toml(own), RULES_FILE)
        return cls(rules=rules, root=base)

    def decide(self, tool: str, target: str | None = None) -> Action | None:
        """The action of the last rule that matches, or None when no rule speaks (mode decides)."""
        for rule in reversed(self.rules):
            if rule.matches(tool, target):
                return rule.action
        return None

    def add(
        self, tool: str, pattern: str = "*", action: Action = "allow", *, persist: bool = False
    ) -> Rule:
        """Add a rule that beats every earlier one ("always allow" in the panel).

        With ``persist=True`` it is also appended to ``planbook.toml`` in the project root, so
        it holds in the next session; the file is re-read first and written atomically.
        """
        try:
            rule = Rule(tool=tool, pattern=pattern, action=action, source="added")
        except ValidationError as exc:
            raise RulesError(f"cannot add rule: {_first_error(exc)}") from None
        if persist:
            if self.root is None:
                raise RulesError("cannot save the rule: this rule set has no project root")
            _append_rule(self.root / RULES_FILE, rule)
        self.rules.append(rule)
        return rule


def rule_target(op: AnyOperation) -> str | None:
    """What a rule's pattern is matched against: the path, the command, or the cell id."""
    key = target_of(op)
    if key == "shell":
        return str(getattr(op, "command", ""))
    if op.kind == "insert_cell":
        return None  # a new cell's id is random: there is nothing to match
    return key.split(":", 1)[1]


def install(session: Any) -> RuleSet:
    """(Re)load the project's rules and make them the session's ``rule_for`` hook, so the
    agent, the magics and the Python API all see the same rules, as the files say now (the
    session and each agent run call this). Rules added in this session are kept. Rules that
    cannot be read fail closed: every change is asked about, and the error is raised."""
    previous = session.extras.get("rules")
    try:
        rules = RuleSet.load(session.workspace.root)
    except RulesError:
        session.rule_for = lambda op: "ask"
        raise
    if isinstance(previous, RuleSet):
        rules.rules.extend(r for r in previous.rules if r.source == "added")
    session.extras["rules"] = rules
    session.rule_for = lambda op: rules.decide(op.kind, rule_target(op))
    return rules


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise RulesError(f"{path.name}: invalid TOML ({exc}); fix the file") from None
    except OSError as exc:
        raise RulesError(f"{path.name}: cannot read it ({exc.strerror})") from None


def _parse_section(section: Any, where: str) -> list[Rule]:
    if not isinstance(section, dict):
        raise RulesError(f"{where}: expected a table, got {type(section).__name__}")
    rules: list[Rule] = []
    compact = section.get("permissions", {})
    if not isinstance(compact, dict):
        raise RulesError(f"{where}: `permissions` must be a table of tool = action")
    for tool, value in compact.items():
        spot = f"{where} permissions.{tool}"
        if isinstance(value, str):
            rules.append(_rule({"tool": tool, "action": value}, spot))
        elif isinstance(value, dict):
            for pattern, action in value.items():
                rules.append(_rule({"tool": tool, "pattern": pattern, "action": action}, spot))
        else:
            raise RulesError(f"{spot}: expected an action or a table of pattern = action")
    explicit = section.get("rules", [])
    if not isinstance(explicit, list):
        raise RulesError(f"{where}: `rules` must be an array of tables ([[rules]])")
    for i, raw in enumerate(explicit, start=1):
        rules.append(_rule(raw, f"{where} rule {i}"))
    return rules


def _rule(raw: Any, where: str) -> Rule:
    if not isinstance(raw, dict):
        raise RulesError(f"{where}: expected a table with tool, pattern and action")
    try:
        return Rule.model_validate({**raw, "source": where})
    except ValidationError as exc:
        raise RulesError(f"{where}: {_first_error(exc)}; fix or remove the rule") from None


def _first_error(exc: ValidationError) -> str:
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


def _toml_string(text: str) -> str:
    # A TOML basic string is a JSON string minus a few escapes JSON never produces here.
    import json

    return json.dumps(text, ensure_ascii=False)


def _append_rule(path: Path, rule: Rule) -> None:
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    block = (
        "\n[[rules]]\n"
        f"tool = {_toml_string(rule.tool)}\n"
        f"pattern = {_toml_string(rule.pattern)}\n"
        f"action = {_toml_string(rule.action)}\n"
    )
    new = (old if not old or old.endswith("\n") else old + "\n") + block
    try:
        tomllib.loads(new)
    except tomllib.TOMLDecodeError:
        # e.g. the file already has `rules = [...]` inline: tell the person what to add by hand.
        raise RulesError(
            f"{path.name}: cannot append the rule automatically; add it by hand: "
            f"{{ tool = {_toml_string(rule.tool)}, pattern = {_toml_string(rule.pattern)}, "
            f"action = {_toml_string(rule.action)} }}"
        ) from None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".planbook-", suffix=".toml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(new)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
