"""Writing the project's rules file (``planbook.toml``): the person's comments and layout kept.

Reading and matching rules is ``matching.py``'s job; this module only changes the file, with
tomlkit, so a rule the person added by answering "always allow ..." lands as one commented
``[[rules]]`` table (trusted for this person: engine/rules/trusted.py), and revoking it
removes exactly that rule. Every change re-reads the file
under an OS lock, checks the result still parses, and replaces the file atomically.

``scopes_for`` turns one permission question into the choices a person can read: this file,
this folder, this command prefix, this tool. A protected target (planbook's own rules, the
project's pyproject.toml, ``.git/``, the notebook itself) offers none, and no rule is ever
written whose pattern names one: those changes are always reviewed.
"""

from __future__ import annotations

import fcntl
import getpass
import os
import shlex
import tempfile
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ConfigDict

from planbook.engine.rules.rule import RULES_FILE, Rule
from planbook.engine.rules.trusted import trust
from planbook.errors import RulesError
from planbook.model.base import PlanbookModel

#: Targets no rule may allow (relative paths; a folder covers what is below it).
PROTECTED = ("planbook.toml", "pyproject.toml", ".git")
_FILE_TOOLS = ("write_file", "edit_file", "delete_file")


class Scope(PlanbookModel):
    """One "always allow" choice offered with a permission question."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str
    tool: str
    pattern: str

    @property
    def choice(self) -> str:
        return f"always allow {self.label}"


def is_protected(target: str | None, protected: tuple[str, ...] = ()) -> bool:
    """Whether ``target`` (a workspace-relative path) is, or is inside, a protected setting."""
    if not target:
        return False
    path = target.replace("\\", "/").removeprefix("./")
    return any(path == item or path.startswith(item + "/") for item in (*PROTECTED, *protected))


def scopes_for(tool: str, target: str | None, protected: tuple[str, ...] = ()) -> list[Scope]:
    """The scopes worth offering for one call, narrowest first."""
    if tool == "shell" and target:
        return _command_scopes(target)
    if tool == "mcp" and target:
        # Never "every MCP tool anywhere": one tool, or the tools of one server.
        server = target.split(".", 1)[0]
        return [
            Scope(label=f"this MCP tool ({target})", tool="mcp", pattern=target),
            Scope(label=f"every tool of {server} ({server}.*)", tool="mcp", pattern=f"{server}.*"),
        ]
    if is_protected(target, protected):
        return []
    scopes: list[Scope] = []
    if target and tool in _FILE_TOOLS:
        scopes.append(Scope(label=f"this file ({target})", tool=tool, pattern=target))
        folder = PurePosixPath(target).parent
        if str(folder) not in (".", ""):
            scopes.append(
                Scope(label=f"this folder ({folder}/*)", tool=tool, pattern=f"{folder}/*")
            )
    elif target:
        scopes.append(Scope(label=f"this target ({target})", tool=tool, pattern=target))
    scopes.append(Scope(label=f"this tool ({tool}, anywhere)", tool=tool, pattern="*"))
    return scopes


def _command_scopes(command: str) -> list[Scope]:
    scopes = [Scope(label=f"this command ({command})", tool="shell", pattern=command)]
    try:
        words = shlex.split(command)
    except ValueError:
        return scopes
    # The program and its subcommand ("git diff"), never an option or a path: those vary.
    prefix = [w for w in words[:2] if not w.startswith("-") and "/" not in w and "=" not in w]
    if len(prefix) == 2 and words[:2] != prefix:
        prefix = prefix[:1]
    if prefix and " ".join(prefix) != command:
        head = " ".join(prefix)
        scopes.append(
            Scope(label=f"commands starting with `{head}`", tool="shell", pattern=f"{head}*")
        )
    return scopes


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    # A lock file beside the rules file: two kernels answering at once keep both rules.
    lock = path.with_name("." + path.name + ".lock")
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write(path: Path, text: str) -> None:
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # never leave a file planbook cannot read back
        raise RulesError(f"{path.name}: the change would break the file ({exc})") from None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".planbook-", suffix=".toml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _parse(path: Path) -> Any:
    try:
        # heavy: tomlkit (the agent extra)
        import tomlkit
        from tomlkit.exceptions import ParseError
    except ImportError:
        raise RulesError(
            f"writing {path.name} keeps your comments with tomlkit, which is not installed: "
            '`pip install "planbook[agent]"`, or add the rule to the file by hand'
        ) from None

    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        return tomlkit.parse(text)
    except ParseError as exc:
        raise RulesError(f"{path.name}: invalid TOML ({exc}); fix the file") from None


def append_rule(root: Path, rule: Rule, comment: str = "") -> None:
    """Add ``rule`` as the last ``[[rules]]`` table of planbook.toml, with a comment line."""
    # heavy: tomlkit (the agent extra)
    import tomlkit
    from tomlkit.items import AoT

    if rule.action == "allow" and is_protected(rule.pattern):
        raise RulesError(
            f"no rule may allow {rule.pattern!r}: planbook's rules, pyproject.toml and .git "
            "are always reviewed"
        )
    path = root / RULES_FILE
    with _locked(path):
        doc = _parse(path)
        existing = doc.get("rules")
        if existing is not None and not isinstance(existing, AoT):
            raise RulesError(
                f"{path.name}: cannot append the rule automatically; add it by hand: "
                f'{{ tool = "{rule.tool}", pattern = "{rule.pattern}", action = "{rule.action}" }}'
            )
        table = tomlkit.table()
        note = comment or f"added by {_who()} on {datetime.now(UTC):%Y-%m-%d}"
        table.add(tomlkit.comment(note.replace("\n", " ")))
        table.add("tool", rule.tool)
        table.add("pattern", rule.pattern)
        table.add("action", rule.action)
        if existing is None:
            doc.append("rules", tomlkit.aot())
        doc["rules"].append(table)
        _write(path, tomlkit.dumps(doc))
        trust(path, [rule])  # the person's own grant: trusted here, and only it


def remove_rule(root: Path, rule: Rule) -> None:
    """Take ``rule`` (as read from planbook.toml: its ``source`` says where) out of the file."""
    # heavy: tomlkit (the agent extra)
    import tomlkit

    path = root / RULES_FILE
    where = rule.source.removeprefix(RULES_FILE).strip()
    if not rule.source.startswith(RULES_FILE):
        raise RulesError(
            f"that rule comes from {rule.source or 'this session'}: "
            + (
                "edit pyproject.toml's [tool.planbook] by hand to remove it"
                if rule.source.startswith("pyproject")
                else "it ends with the session"
            )
        )
    with _locked(path):
        doc = _parse(path)
        if where.startswith("rule "):
            index = int(where.removeprefix("rule ")) - 1
            tables = doc.get("rules")
            if (
                tables is None
                or not 0 <= index < len(tables)
                or _as_rule(tables[index])
                != (
                    rule.tool,
                    rule.pattern,
                    rule.action,
                )
            ):
                raise RulesError(f"{RULES_FILE} changed since it was read: see `%plan rules`")
            del tables[index]
            if not len(tables):
                del doc["rules"]
        elif where.startswith("permissions."):
            table = doc.get("permissions", {})
            value = table.get(rule.tool)
            if isinstance(value, str):
                del table[rule.tool]
            elif value is not None and rule.pattern in value:
                del value[rule.pattern]
                if not len(value):
                    del table[rule.tool]
            else:
                raise RulesError(f"{RULES_FILE} changed since it was read: see `%plan rules`")
        else:
            raise RulesError(f"cannot tell where {rule.source!r} is in {RULES_FILE}")
        _write(path, tomlkit.dumps(doc))


def _as_rule(table: Any) -> tuple[str, str, str]:
    return (str(table.get("tool")), str(table.get("pattern", "*")), str(table.get("action")))


def _who() -> str:

    try:
        return getpass.getuser()
    except Exception:  # no login name in some containers
        return "you"
