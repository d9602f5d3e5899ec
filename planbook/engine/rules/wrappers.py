"""Commands that run another command (``sudo``, ``env``, ``xargs``, ``find -exec``, ``sh -c``,
``eval``): which they are, the options that take an argument, and the command they run, so a
rule or the classifier sees through them."""

from __future__ import annotations

from planbook.engine.rules.shell_words import SimpleCommand, Word

#: Shells whose ``-c`` text is a command line of its own.
SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "mksh", "busybox-sh", "ash"}

#: For each wrapper, its options that take a separate argument.
_WRAPPER_ARGS: dict[str, set[str]] = {
    "command": set(),
    "builtin": set(),
    "exec": {"-a"},
    "nohup": set(),
    "setsid": set(),
    "time": {"-f", "-o", "--format", "--output"},
    "env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
    "sudo": {"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-R", "-T"},
    "doas": {"-u", "-C"},
    "nice": {"-n", "--adjustment"},
    "ionice": {"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"},
    "timeout": {"-s", "-k", "--signal", "--kill-after"},
    "stdbuf": {"-i", "-o", "-e", "--input", "--output", "--error"},
    "xargs": {"-I", "-n", "-L", "-P", "-d", "-E", "-s", "-a", "--arg-file", "--delimiter"},
    "chroot": set(),
    "busybox": set(),
    "flock": {"-w", "-E", "--timeout", "--conflict-exit-code"},
    "taskset": set(),
    "unbuffer": set(),
    "watch": {"-n", "-d", "--interval"},
}
WRAPPERS = frozenset(_WRAPPER_ARGS) | SHELLS | {"eval"}
#: Wrappers whose first operand is theirs, not the command's.
_OPERANDS = {"timeout": 1, "chroot": 1, "flock": 1, "taskset": 1}
#: Wrappers that only change how a command runs, not what it may do: a rule allowing the
#: command allows it through these too.
TRANSPARENT = frozenset(
    {"command", "builtin", "exec", "nohup", "time", "nice", "timeout", "stdbuf"}
)


def unwrapped(command: SimpleCommand) -> list[SimpleCommand]:
    """The commands a wrapper runs: ``sudo -u x rm y`` gives ``rm y``; ``find -exec rm {} +``
    gives ``rm {} +``. Option arguments the table does not know are taken conservatively: the
    deny check sees every later word as a possible command (see rules)."""
    out: list[SimpleCommand] = []
    words = list(command.words)
    wrappers = list(command.wrappers)
    while words and not words[0].dynamic and words[0].text in _WRAPPER_ARGS:
        name = words[0].text.rsplit("/", 1)[-1]
        rest = _skip_options(name, words[1:])
        if not rest:
            break
        wrappers.append(name)
        words = rest
        out.append(SimpleCommand(tuple(words), (), command.redirects, tuple(wrappers)))
    if command.words and command.words[0].text == "find":
        out += _find_exec(command)
    return out


def _skip_options(name: str, words: list[Word]) -> list[Word]:
    takes_arg = _WRAPPER_ARGS[name]
    i = 0
    while i < len(words):
        t = words[i].text
        if t == "--":
            i += 1
            break
        if name == "env" and "=" in t and not t.startswith("-"):
            i += 1
            continue
        if not t.startswith("-") or t == "-":
            break
        i += 2 if t in takes_arg else 1
    return words[i + _OPERANDS.get(name, 0) :]


def _find_exec(command: SimpleCommand) -> list[SimpleCommand]:
    out: list[SimpleCommand] = []
    words = list(command.words)
    for i, w in enumerate(words):
        if w.text in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next(
                (j for j in range(i + 1, len(words)) if words[j].text in (";", "+")), len(words)
            )
            if end > i + 1:
                out.append(SimpleCommand(tuple(words[i + 1 : end]), (), (), ("find",)))
    return out


def scripts(command: SimpleCommand) -> list[str]:
    """Command text a shell or ``eval`` will parse again: ``sh -c 'rm x'`` gives ``rm x``."""
    words = command.words
    if not words or words[0].dynamic:
        return []
    name = words[0].text.rsplit("/", 1)[-1]
    if name == "eval":
        return [" ".join(w.text for w in words[1:])]
    if name in SHELLS:
        for i, w in enumerate(words[1:], start=1):
            if w.text.startswith("-") and "c" in w.text and not w.text.startswith("--"):
                return [words[i + 1].text] if i + 1 < len(words) else []
    return []
