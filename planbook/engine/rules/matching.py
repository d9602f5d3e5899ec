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

Calls to the tools of MCP servers (planbook.toml's ``[mcp.servers.NAME]``) are the tool ``mcp``,
matched on ``server.tool``: ``mcp = { "github.create_*" = "ask", "github.get_*" = "allow" }`` in
``[permissions]``. deny refuses the call, ask stages it (or asks, outside plan mode), allow runs
it at once outside plan mode, a write included: the person said so.

Shell commands are matched on what the shell will run (engine/shell_parse.py): each simple
command on its own (``true && rm x`` is ``true`` and ``rm x``; leading spaces, quotes,
continuations, ``$(...)``, subshells and wrappers such as ``sudo``/``env``/``xargs`` are seen
through). A deny on any part denies the whole; the whole is allowed only when every part is;
what cannot be parsed is asked about, never allowed.

An allow rule read from a file holds only when this person trusts it (engine/rules/trusted.py:
planbook trusts the rules it writes, ``planbook trust FILE`` the ones written by hand); an
untrusted one acts as ask and never outweighs a deny, and ``ignored`` says so per file.

Protected settings (engine/protected.py: planbook.toml, ``[tool.planbook]``, ``.git/``, the
notebook) are always asked about: a rule that would allow them is ignored for them, and
``load`` says so in ``ignored``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planbook.engine.rules.file import append_rule
from planbook.engine.rules.protected import Protected
from planbook.engine.rules.rule import RULES_FILE, Action, Rule, first_error
from planbook.engine.rules.shell_parse import parse
from planbook.engine.rules.shell_words import SimpleCommand
from planbook.engine.rules.trusted import trust, untrusted
from planbook.engine.rules.wrappers import TRANSPARENT, WRAPPERS
from planbook.errors import RulesError, invalid_as
from planbook.model.operations import AnyOperation, McpCall, target_of
from planbook.model.words import count


@dataclass
class RuleSet:
    """The rules of one project, in precedence order (the last match wins)."""

    rules: list[Rule] = field(default_factory=list)
    #: Where `add(..., persist=True)` writes; None when the rule set is not tied to a project.
    root: Path | None = None
    #: What no rule can allow (always asked about); None: nothing is protected.
    protected: Protected | None = None

    @classmethod
    def load(cls, root: str | os.PathLike[str]) -> RuleSet:
        """Read pyproject.toml's ``[tool.planbook]`` and then planbook.toml in ``root``."""
        base = Path(root)
        rules: list[Rule] = []
        pyproject = base / "pyproject.toml"
        if pyproject.is_file():
            section = _read_toml(pyproject).get("tool", {}).get("planbook", {})
            found = _parse_section(section, "pyproject.toml [tool.planbook]")
            rules += _as_trusted(pyproject, found)
        own = base / RULES_FILE
        if own.is_file():
            rules += _as_trusted(own, _parse_section(_read_toml(own), RULES_FILE))
        return cls(rules=rules, root=base, protected=Protected(base))

    def decide(self, tool: str, target: str | None = None) -> Action | None:
        """The action of the last rule that matches, or None when no rule speaks (mode decides).

        A shell command is matched part by part; a protected target is never allowed."""
        verdict = self._shell(target) if tool == "shell" and target is not None else None
        if tool != "shell" or target is None:
            verdict = self._last_match(tool, target)
        if verdict != "deny" and self.protected and self.protected.reason(tool, target):
            return "ask"
        return verdict

    def decide_op(self, op: AnyOperation) -> Action | None:
        """``decide`` for a staged operation: also sees what a file change would write."""
        verdict = self.decide(rule_tool(op), rule_target(op))
        if verdict != "deny" and self.protected and self.protected.op_reason(op):
            return "ask"
        return verdict

    def protected_reason(self, op: AnyOperation) -> str | None:
        """Why ``op`` touches a protected setting (always reviewed), or None."""
        return self.protected.op_reason(op) if self.protected else None

    def ignored(self) -> list[str]:
        """One line for each file whose allow rules this person has not trusted (they act as
        ask), and for each rule that tries to allow a protected setting (it is ignored)."""
        out = self.not_trusted()
        if self.protected is None:
            return out
        samples = [
            ("write_file", "planbook.toml"),
            ("edit_file", "pyproject.toml"),
            ("write_file", ".git/config"),
            ("shell", "git config core.fsmonitor x"),
            ("shell", "echo x > planbook.toml"),
        ]
        if self.protected.notebook is not None:
            samples.append(("shell", f"rm {self.protected.notebook.name}"))
        for rule in self.rules:
            if rule.action != "allow" or rule.pattern == "*":
                continue
            hits = [t for tool, t in samples if rule.matches(tool, t)]
            if hits:
                out.append(
                    f"{rule.source or 'a rule'}: allow {rule.tool} {rule.pattern!r} is ignored "
                    f"for protected settings such as {hits[0]!r}: they are always reviewed"
                )
        return out

    def not_trusted(self) -> list[str]:
        """One line per rules file whose allow rules this person has not trusted."""
        by_file: dict[str, list[Rule]] = {}
        for rule in self.rules:
            if rule.untrusted:
                name = RULES_FILE if rule.source.startswith(RULES_FILE) else "pyproject.toml"
                by_file.setdefault(name, []).append(rule)
        return [
            f"{name}'s allow rules are not trusted here: {count(rules, 'rule')} "
            f"({', '.join(f'{r.tool} {r.pattern!r}' for r in rules[:3])}"
            f"{', ...' if len(rules) > 3 else ''}) act as ask until you trust them: "
            f"`planbook trust {name}` or `%plan trust`"
            for name, rules in by_file.items()
        ]

    def add(
        self,
        tool: str,
        pattern: str = "*",
        action: Action = "allow",
        *,
        persist: bool = False,
        comment: str = "",
    ) -> Rule:
        """Add a rule that beats every earlier one ("always allow" in the panel).

        With ``persist=True`` it is also appended to ``planbook.toml`` in the project root, so
        it holds in the next session, with ``comment`` above it (see rules_file.py: the file's
        own comments and layout are kept).
        """
        with invalid_as(
            lambda _, problem: RulesError(f"cannot add rule: {problem}"),
            whole="rule",
            explain=first_error,
        ):
            rule = Rule(tool=tool, pattern=pattern, action=action, source="added")
        if persist:
            if self.root is None:
                raise RulesError("cannot save the rule: this rule set has no project root")
            append_rule(self.root, rule, comment)
        self.rules.append(rule)
        return rule

    def _last_match(self, tool: str, target: str | None) -> Action | None:
        return self._verdict(lambda rule: rule.matches(tool, target))

    def _verdict(self, matches: Callable[[Rule], bool]) -> Action | None:
        """The action of the last rule that ``matches``; an untrusted allow (acting as ask)
        never outweighs an earlier deny."""
        for i in range(len(self.rules) - 1, -1, -1):
            rule = self.rules[i]
            if matches(rule):
                if rule.untrusted and any(
                    r.action == "deny" and matches(r) for r in self.rules[:i]
                ):
                    return "deny"
                return rule.action
        return None

    def _shell(self, command: str) -> Action | None:
        whole = self._last_match("shell", command)
        if whole == "deny":
            return "deny"
        parsed = parse(command)
        parts = [c for c in parsed.commands if c.words]
        verdicts = [self._part(c, parts) for c in parts]
        if "deny" in verdicts:
            return "deny"
        if parsed.error or "ask" in verdicts:
            return "ask"  # never allowed: we cannot tell what runs
        counted = [v for v in verdicts if v != "defer"]
        if counted and all(v == "allow" for v in counted):
            return "allow"
        return None if parts else whole

    def _part(self, command: SimpleCommand, parts: list[SimpleCommand]) -> Action | str | None:
        """One simple command: denied if any way of reading it is denied. Allowed only as
        written, or through wrappers that do not change what it may do ("defer": the command
        inside a wrapper, or the transparent wrapper around it, speaks for both)."""
        name = command.words[0]
        program = name.text.rsplit("/", 1)[-1]
        bare = " ".join(w.text for w in command.words)
        texts = [command.text, bare]
        if program in WRAPPERS:
            # A wrapper option we do not know could take the command's place: every later
            # word may start the command, for the deny check.
            texts += [
                " ".join(w.text for w in command.words[i:]) for i in range(1, len(command.words))
            ]
        verdicts = [self._match_part(t) for t in texts]
        if "deny" in verdicts:
            return "deny"
        if "ask" in verdicts:
            return "ask"
        if name.dynamic or name.globbed:
            return "ask"  # `$CMD x`: only the shell knows what runs
        if command.wrappers:
            if all(w in TRANSPARENT for w in command.wrappers) and not command.assignments:
                return verdicts[1]
            return "defer"  # the wrapper as written must be allowed
        if program in TRANSPARENT and any(p.wrappers[:1] == (program,) for p in parts):
            return "defer" if verdicts[0] != "allow" else "allow"
        return verdicts[0]

    def _match_part(self, text: str) -> Action | None:
        """As ``_last_match``; a pattern ``rm *`` also matches a bare ``rm`` (no arguments)."""
        return self._verdict(
            lambda rule: rule.matches("shell", text) or rule.matches("shell", text + " ")
        )


def rule_tool(op: AnyOperation) -> str:
    """The tool name rules give for ``op``: its kind, and ``mcp`` for any MCP server's tool."""
    return "mcp" if isinstance(op, McpCall) else op.kind


def rule_target(op: AnyOperation) -> str | None:
    """What a rule's pattern is matched against: the path, the command, the cell id, or
    ``server.tool`` for an MCP call."""
    if isinstance(op, McpCall):
        return op.name
    key = target_of(op)
    if key == "shell":
        return str(getattr(op, "command", ""))
    if op.kind == "insert_cell":
        return None  # a new cell's id is random: there is nothing to match
    return key.split(":", 1)[1]


def trust_file(file: Path) -> list[Rule]:
    """Trust the allow rules ``file`` (a planbook.toml, or a pyproject.toml's
    ``[tool.planbook]``) holds now, as this person: the ones newly trusted. `RulesError`
    (one line) when it cannot be read."""
    if not file.is_file():
        raise RulesError(f"{file}: no such file; name a planbook.toml or pyproject.toml")
    raw = _read_toml(file)
    if file.name == "pyproject.toml":
        rules = _parse_section(raw.get("tool", {}).get("planbook", {}), file.name)
    else:
        rules = _parse_section(raw, file.name)
    return trust(file, rules)


def _as_trusted(file: Path, rules: list[Rule]) -> list[Rule]:
    """``rules`` as read from ``file``, each allow rule this person has not trusted made an
    ask (engine/rules/trusted.py)."""
    distrusted = {id(r) for r in untrusted(file, rules)}
    return [
        r.model_copy(update={"action": "ask", "untrusted": True}) if id(r) in distrusted else r
        for r in rules
    ]


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
    with invalid_as(
        lambda _, problem: RulesError(f"{where}: {problem}; fix or remove the rule"),
        whole="rule",
        explain=first_error,
    ):
        return Rule.model_validate({**raw, "source": where})
