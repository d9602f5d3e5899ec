"""A shell command line as planbook reads it: words after quote removal, redirects, simple
commands (with the wrappers peeled off to reach them) and the whole parsed line."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Word:
    """One word after quote removal."""

    text: str
    #: Holds an expansion or substitution: the shell decides its value, we cannot.
    dynamic: bool = False
    #: Holds an unquoted ``*``, ``?`` or ``[``: the shell may expand it into file names.
    globbed: bool = False


@dataclass(frozen=True)
class Redirect:
    op: str
    target: Word | None


@dataclass(frozen=True)
class SimpleCommand:
    """A program with its arguments, as the shell will run it."""

    words: tuple[Word, ...]
    assignments: tuple[str, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    #: The wrappers peeled off to reach this command (``sudo``, ``env``, ``xargs``...), outermost
    #: first; empty for a command written as such.
    wrappers: tuple[str, ...] = ()

    @property
    def name(self) -> Word | None:
        return self.words[0] if self.words else None

    @property
    def text(self) -> str:
        """Assignments and words joined by single spaces: what rule patterns are matched on."""
        return " ".join([*self.assignments, *(w.text for w in self.words)])


@dataclass(frozen=True)
class ParsedShell:
    #: Every simple command, nested ones included (substitutions, subshells, ``sh -c``), and for
    #: a wrapped command both the wrapper and what it runs.
    commands: tuple[SimpleCommand, ...] = ()
    #: Syntax the command uses: redirect, heredoc, substitution, expansion, subshell, group,
    #: background, control, negation, comment, assignment, function.
    features: frozenset[str] = frozenset()
    #: Why the command cannot be read for sure; None when it parsed completely.
    error: str | None = None
    #: Every word and redirect target, nested ones included (what the command names).
    words: tuple[Word, ...] = field(default=(), repr=False)
    #: Every redirect, wherever it stands (also one with no command, such as `> a.txt`).
    redirects: tuple[Redirect, ...] = ()
