"""Is a shell command read-only? Only a "yes" we are sure of counts; anything unsure is a write.

This is the quick first opinion and the explanation, not the wall: a command the agent runs at
once runs inside the OS sandbox (planbook/workspace/sandbox.py), so a wrong "yes" fails there
instead of
writing. The command is parsed by the same parser the permission rules use
(engine/shell_parse.py, tree-sitter-bash, with sh's line joining) and accepted only when:

- every simple command is an allow-listed program called by bare name (``ls``, ``cat``,
  ``grep``, ``git status``, ...), each with its own check for the options that would make it
  write, run something or open a connection (``sort -o``, ``uniq IN OUT``, ``rg --pre``,
  ``find -fprint``, ``git log --output``, ``pip list --outdated``, ...);
- joined only by ``|``, ``&&``, ``||``, ``;`` or newlines.

Redirections (but reading a file with ``<``, ``2>/dev/null`` and ``2>&1``), here-documents,
substitutions, any ``$`` expansion (a variable could hold
``-delete``), subshells, groups, background jobs, control flow, comments and environment
assignments all make it unsure. Globs are refused where a file name could become an option.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from planbook.engine.rules.shell_parse import ParsedShell, Word, parse
from planbook.errors import UnsureCommand

__all__ = ["READ_ONLY_PROGRAMS", "ShellVerdict", "classify", "is_read_only"]


@dataclass(frozen=True)
class ShellVerdict:
    """The classifier's answer, with a reason a person can read."""

    read_only: bool
    reason: str


_WHY = {
    "redirect": "redirection (`<`, `>`) can write or truncate files",
    "heredoc": "a here-document (`<<`) feeds text to a command",
    "substitution": "command substitution (`$(...)`, backticks, `<(...)`) runs another command",
    "expansion": "expansion (`$`): a variable could hold anything",
    "subshell": "shell syntax: a subshell `( ... )`",
    "group": "shell syntax: a group `{ ...; }`",
    "background": "background job (`&`)",
    "control": "shell control flow (if, for, while, case, [[ ]])",
    "function": "a function definition",
    "negation": "shell syntax `!`",
    "assignment": "environment assignment before the command",
    "comment": "a comment could hide part of the command",
}
_WORST_FIRST = list(_WHY)


# --- per-program checks: each returns None when sure, or raises UnsureCommand ----------------

Check = Callable[[str, list[Word]], None]


def _plain(program: str, args: list[Word]) -> None:
    """Programs with no option that writes a file or runs another program."""


def _no_globs(program: str, args: list[Word]) -> None:
    if any(a.globbed for a in args):
        raise UnsureCommand(
            f"`{program}` with an unquoted glob: a file name could become an option"
        )


def _long_prefix_of(arg: str, *names: str) -> bool:
    """GNU tools accept unambiguous abbreviations, so `--out` means `--output`."""
    name = arg.split("=", 1)[0]
    return len(name) > 2 and any(full.startswith(name) for full in names)


_FIND_WRITERS = {
    "-delete",
    "-exec",
    "-execdir",
    "-ok",
    "-okdir",
    "-fprint",
    "-fprint0",
    "-fprintf",
    "-fls",
}


def _find(program: str, args: list[Word]) -> None:
    _no_globs(program, args)
    for a in args:
        if a.text in _FIND_WRITERS:
            raise UnsureCommand(f"`find {a.text}` changes files or runs commands")


def _sort(program: str, args: list[Word]) -> None:
    _no_globs(program, args)
    for a in args:
        t = a.text
        if t.startswith("--") and _long_prefix_of(
            t, "--output", "--compress-program", "--temporary-directory"
        ):
            raise UnsureCommand(f"`sort {t}` writes a file or runs a program")
        if t.startswith("-") and not t.startswith("--") and ("o" in t or "T" in t):
            raise UnsureCommand("`sort -o` writes a file")


def _uniq(program: str, args: list[Word]) -> None:
    _no_globs(program, args)
    # `-` (standard input) is an operand too: `uniq - OUT` writes OUT. Option values such as
    # `-f 1` count as operands here: refusing a harmless call is fine, missing a write is not.
    operands = [a for a in args if a.text == "-" or not a.text.startswith("-")]
    if len(operands) > 1 or any(a.text == "--" for a in args):
        raise UnsureCommand("`uniq IN OUT` writes its second file")


def _rg(program: str, args: list[Word]) -> None:
    _no_globs(program, args)
    for a in args:
        t = a.text
        if t.startswith("--") and _long_prefix_of(t, "--pre", "--search-zip", "--hostname-bin"):
            raise UnsureCommand(f"`rg {t}` runs a program on every file")
        if t.startswith("-") and not t.startswith("--") and "z" in t:
            raise UnsureCommand("`rg -z` runs decompression programs")


def _date(program: str, args: list[Word]) -> None:
    _no_globs(program, args)
    for a in args:
        t = a.text
        if t.startswith("--") and _long_prefix_of(t, "--set"):
            raise UnsureCommand("`date --set` changes the clock")
        if t.startswith("-") and not t.startswith("--") and "s" in t:
            raise UnsureCommand("`date -s` changes the clock")
        if not t.startswith(("-", "+")):
            raise UnsureCommand("`date` with an operand can set the clock")


_GIT_READERS = {"status", "log", "diff", "show", "blame", "ls-files", "rev-parse", "shortlog"}
#: Options of those subcommands that write a file or run a program (abbreviations included).
_GIT_WRITERS = ("--output", "--ext-diff", "--textconv", "--open-files-in-pager", "--exec")


def _git(program: str, args: list[Word]) -> None:
    _no_globs(program, args)
    if not args or args[0].text not in _GIT_READERS:
        first = args[0].text if args else ""
        raise UnsureCommand(f"`git {first}` is not one of: {', '.join(sorted(_GIT_READERS))}")
    for a in args[1:]:
        t = a.text
        if t.startswith("--") and _long_prefix_of(t, *_GIT_WRITERS):
            raise UnsureCommand(f"`git {args[0].text} {t}` writes a file or runs a program")
        if t in ("-O", "-o") or (t.startswith("-O") and not t.startswith("--")):
            raise UnsureCommand(f"`git {args[0].text} {t}` writes a file or runs a program")


def _python(program: str, args: list[Word]) -> None:
    texts = [a.text for a in args]
    if texts in (["--version"], ["-V"]):
        return
    if len(texts) >= 3 and texts[:2] == ["-m", "pip"]:
        _pip("pip", args[2:])
        return
    raise UnsureCommand(f"`{program}` runs code; only `{program} --version` is read-only")


#: pip options that write a file, point pip at other code, or open a connection.
_PIP_WRITERS = (
    "--log",
    "--log-file",
    "--cache-dir",
    "--path",
    "--src",
    "--report",
    "--outdated",
    "--uptodate",
    "--index-url",
    "--extra-index-url",
    "--find-links",
    "--proxy",
    "--trusted-host",
    "--cert",
    "--client-cert",
    "--target",
    "--prefix",
    "--root",
)


def _pip(program: str, args: list[Word]) -> None:
    _no_globs(program, args)
    if not args or args[0].text not in {"list", "show", "freeze"}:
        raise UnsureCommand("only `pip list`, `pip show` and `pip freeze` are read-only")
    for a in args[1:]:
        t = a.text
        if t.startswith("--") and _long_prefix_of(t, *_PIP_WRITERS):
            raise UnsureCommand(f"`pip {t}` writes, connects or points pip elsewhere")
        # Short options cluster (`-vo`): -o outdated, -u uptodate, -i index, -f find-links.
        if t.startswith("-") and not t.startswith("--") and set(t[1:]) & set("oufi"):
            raise UnsureCommand(f"`pip {args[0].text} {t}` connects to an index or writes")


READ_ONLY_PROGRAMS: dict[str, Check] = {
    **{
        name: _plain
        for name in (
            "ls",
            "cat",
            "head",
            "tail",
            "wc",
            "pwd",
            "echo",
            "grep",
            "egrep",
            "fgrep",
            "cut",
            "nl",
            "basename",
            "dirname",
            "realpath",
            "stat",
            "du",
            "df",
            "whoami",
            "uname",
            "true",
            "false",
            "diff",
            "tr",
            "which",
        )
    },
    "find": _find,
    "sort": _sort,
    "uniq": _uniq,
    "rg": _rg,
    "date": _date,
    "git": _git,
    "python": _python,
    "python3": _python,
    "pip": _pip,
    "pip3": _pip,
}


def _check(words: tuple[Word, ...]) -> str:
    program, args = words[0], list(words[1:])
    if program.globbed or program.dynamic or program.text not in READ_ONLY_PROGRAMS:
        raise UnsureCommand(f"`{program.text}` is not a known read-only program")
    for a in args:
        t = a.text
        if t.startswith("--") and _long_prefix_of(t, "--output", "--log-file"):
            raise UnsureCommand(f"`{program.text} {t}` writes a file")
    READ_ONLY_PROGRAMS[program.text](program.text, args)
    return program.text


def _harmless(parsed: ParsedShell) -> bool:
    """Redirects that cannot write: read a named file (`< a.txt`), throw output away
    (`2>/dev/null`) or join the two outputs (`2>&1`)."""
    for r in parsed.redirects:
        target = r.target
        if target is None or target.dynamic or target.globbed:
            return False
        op = r.op.lstrip("012")
        if op == "<":
            continue
        if op in (">", ">>") and target.text == "/dev/null":
            continue
        if op in (">&", "<&") and target.text in ("1", "2"):
            continue
        return False
    return True


def classify(command: str) -> ShellVerdict:
    """Read-only only when sure; every other command (and anything unparsable) is a write."""
    parsed = parse(command)
    if parsed.error:
        return ShellVerdict(read_only=False, reason=parsed.error)
    for feature in _WORST_FIRST:
        if feature in parsed.features and not (feature == "redirect" and _harmless(parsed)):
            return ShellVerdict(read_only=False, reason=_WHY[feature])
    top = [c for c in parsed.commands if not c.wrappers]
    if not top:
        return ShellVerdict(read_only=False, reason="empty command")
    try:
        programs = [_check(c.words) for c in top if c.words]
    except UnsureCommand as why:
        return ShellVerdict(read_only=False, reason=why.args[0])
    if len(programs) != len(top):
        return ShellVerdict(read_only=False, reason="a command with no program")
    return ShellVerdict(read_only=True, reason="read-only: " + ", ".join(programs))


def is_read_only(command: str) -> bool:
    return classify(command).read_only
