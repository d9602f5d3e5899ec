"""Is a shell command read-only? Only a "yes" we are sure of counts; anything unsure is a write.

Plan mode lets the agent run read-only commands at once and stages every other command, so a
wrong "yes" here would be a way around plan mode. The classifier therefore parses the command
itself (a small POSIX-sh lexer that, unlike ``shlex``, remembers which characters were quoted, so
a quoted ``'|'`` stays an argument) and accepts only:

- allow-listed programs called by bare name (``ls``, ``cat``, ``grep``, ``git status``, ...),
  each with its own check for the options that would make it write or run something;
- joined by ``|``, ``&&``, ``||`` or ``;`` into other read-only commands.

It refuses redirection, command/process substitution, backticks, any ``$`` expansion (a variable
could hold ``-delete``), subshells, background jobs, newlines, comments and environment
assignments. Globs are refused where a file name could turn into an option that writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["READ_ONLY_PROGRAMS", "ShellVerdict", "classify", "is_read_only"]


@dataclass(frozen=True)
class ShellVerdict:
    """The classifier's answer, with a reason a person can read."""

    read_only: bool
    reason: str


@dataclass(frozen=True)
class _Word:
    text: str
    #: An unquoted ``*``, ``?`` or ``[``: the shell may expand it into file names.
    globbed: bool


class _Unsure(Exception):
    """Raised by the lexer and the checks; the message becomes the verdict's reason."""


_SEPARATORS = {"|", "&&", "||", ";"}
_OPERATOR_CHARS = set("|&;<>()")


def _lex(command: str) -> list[_Word | str]:
    """Split into words and operators (operators are plain ``str``, words ``_Word``)."""
    out: list[_Word | str] = []
    word: list[str] = []
    in_word = globbed = False
    i, n = 0, len(command)

    def end_word() -> None:
        nonlocal in_word, globbed
        if in_word:
            out.append(_Word("".join(word), globbed))
        word.clear()
        in_word = globbed = False

    while i < n:
        c = command[i]
        if c in "\n\r":
            raise _Unsure("several lines: run one command line at a time")
        if c in " \t":
            end_word()
        elif c == "'":
            close = command.find("'", i + 1)
            if close < 0:
                raise _Unsure("unbalanced single quote")
            word.append(command[i + 1 : close])
            in_word, i = True, close
        elif c == '"':
            i = _double_quoted(command, i + 1, word)
            in_word = True
        elif c == "\\":
            if i + 1 >= n:
                raise _Unsure("trailing backslash")
            word.append(command[i + 1])
            in_word, i = True, i + 1
        elif c in "$`":
            raise _Unsure("expansion or substitution (`$` or a backtick)")
        elif c == "#" and not in_word:
            raise _Unsure("a comment could hide part of the command")
        elif c in "!{}":
            # `!` negates a pipeline, braces group commands or expand: never needed to read.
            raise _Unsure(f"shell syntax {c!r}")
        elif c in _OPERATOR_CHARS:
            end_word()
            op = c
            if i + 1 < n and command[i + 1] in _OPERATOR_CHARS:
                op += command[i + 1]
                i += 1
            out.append(op)
        else:
            if c in "*?[":
                globbed = True
            word.append(c)
            in_word = True
        i += 1
    end_word()
    return out


def _double_quoted(command: str, i: int, word: list[str]) -> int:
    """Read a double-quoted part starting after the quote; return the closing quote's index."""
    while i < len(command):
        c = command[i]
        if c == '"':
            return i
        if c in "$`":
            raise _Unsure("expansion or substitution inside double quotes")
        if c == "\\" and i + 1 < len(command) and command[i + 1] in '"\\':
            i += 1
            c = command[i]
        elif c in "\n\r":
            raise _Unsure("several lines: run one command line at a time")
        word.append(c)
        i += 1
    raise _Unsure("unbalanced double quote")


def _split(tokens: list[_Word | str]) -> list[list[_Word]]:
    """Cut the token list at separators; any other operator is unsure."""
    segments: list[list[_Word]] = [[]]
    for tok in tokens:
        if isinstance(tok, _Word):
            segments[-1].append(tok)
        elif tok in _SEPARATORS:
            if not segments[-1]:
                raise _Unsure(f"empty command before {tok!r}")
            segments.append([])
        elif "<" in tok or ">" in tok:
            raise _Unsure("redirection (`<`, `>`) can write or truncate files")
        elif tok == "&":
            raise _Unsure("background job (`&`)")
        else:
            raise _Unsure(f"shell syntax {tok!r} (subshell or unusual operator)")
    if not segments[-1]:
        if len(segments) == 1:
            raise _Unsure("empty command")
        segments.pop()  # a trailing `;` is harmless
    return segments


# --- per-program checks: each returns None when sure, or raises _Unsure -------------------------

Check = Callable[[str, list[_Word]], None]


def _plain(program: str, args: list[_Word]) -> None:
    """Programs with no option that writes a file or runs another program."""


def _no_globs(program: str, args: list[_Word]) -> None:
    if any(a.globbed for a in args):
        raise _Unsure(f"`{program}` with an unquoted glob: a file name could become an option")


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


def _find(program: str, args: list[_Word]) -> None:
    _no_globs(program, args)
    for a in args:
        if a.text in _FIND_WRITERS:
            raise _Unsure(f"`find {a.text}` changes files or runs commands")


def _sort(program: str, args: list[_Word]) -> None:
    _no_globs(program, args)
    for a in args:
        t = a.text
        if t.startswith("--") and _long_prefix_of(t, "--output", "--compress-program"):
            raise _Unsure(f"`sort {t}` writes a file or runs a program")
        if t.startswith("-") and not t.startswith("--") and "o" in t:
            raise _Unsure("`sort -o` writes a file")


def _uniq(program: str, args: list[_Word]) -> None:
    _no_globs(program, args)
    if len([a for a in args if not a.text.startswith("-")]) > 1:
        raise _Unsure("`uniq IN OUT` writes its second file")


def _rg(program: str, args: list[_Word]) -> None:
    _no_globs(program, args)
    for a in args:
        if a.text.startswith("--pre"):
            raise _Unsure("`rg --pre` runs a program on every file")


def _date(program: str, args: list[_Word]) -> None:
    _no_globs(program, args)
    for a in args:
        t = a.text
        if t.startswith("--") and _long_prefix_of(t, "--set"):
            raise _Unsure("`date --set` changes the clock")
        if t.startswith("-") and not t.startswith("--") and "s" in t:
            raise _Unsure("`date -s` changes the clock")
        if not t.startswith(("-", "+")):
            raise _Unsure("`date` with an operand can set the clock")


_GIT_READERS = {"status", "log", "diff", "show", "blame", "ls-files", "rev-parse", "shortlog"}


def _git(program: str, args: list[_Word]) -> None:
    _no_globs(program, args)
    if not args or args[0].text not in _GIT_READERS:
        first = args[0].text if args else ""
        raise _Unsure(f"`git {first}` is not one of: {', '.join(sorted(_GIT_READERS))}")
    for a in args[1:]:
        if a.text.startswith(("--output", "--ext-diff")):
            raise _Unsure(f"`git {args[0].text} {a.text}` writes a file or runs a program")


def _python(program: str, args: list[_Word]) -> None:
    texts = [a.text for a in args]
    if texts in (["--version"], ["-V"]):
        return
    if len(texts) >= 3 and texts[:2] == ["-m", "pip"]:
        _pip("pip", args[2:])
        return
    raise _Unsure(f"`{program}` runs code; only `{program} --version` is read-only")


def _pip(program: str, args: list[_Word]) -> None:
    _no_globs(program, args)
    if not args or args[0].text not in {"list", "show", "freeze"}:
        raise _Unsure("only `pip list`, `pip show` and `pip freeze` are read-only")
    for a in args[1:]:
        if a.text.startswith(("--log", "--cache-dir", "--path")):
            raise _Unsure(f"`pip {a.text}` writes or points pip elsewhere")


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


def _check_segment(words: list[_Word]) -> str:
    program, args = words[0], words[1:]
    if program.globbed or program.text not in READ_ONLY_PROGRAMS:
        if "=" in program.text:
            raise _Unsure("environment assignment before the command")
        raise _Unsure(f"`{program.text}` is not a known read-only program")
    READ_ONLY_PROGRAMS[program.text](program.text, args)
    return program.text


def classify(command: str) -> ShellVerdict:
    """Read-only only when sure; every other command (and anything unparsable) is a write."""
    try:
        programs = [_check_segment(seg) for seg in _split(_lex(command))]
    except _Unsure as why:
        return ShellVerdict(read_only=False, reason=str(why))
    return ShellVerdict(read_only=True, reason="read-only: " + ", ".join(programs))


def is_read_only(command: str) -> bool:
    return classify(command).read_only
