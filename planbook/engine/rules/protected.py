"""Protected settings: what always goes through review, in every mode, whatever a rule says.

planbook's own configuration (``planbook.toml``, the ``[tool.planbook]`` table of
``pyproject.toml``), anything under ``.git/`` (its config runs programs: ``core.fsmonitor``,
pagers, hooks) and the notebook file itself. A change that could give the agent more power than
the person gave it must be seen by the person: no mode applies it at once and no rule allows it.

For files the path decides (after following symlinks). For a shell command the parse decides:
a word or redirect that names a protected path (globs that could match one included), a
``git`` subcommand that rewrites settings (``git config``, ``remote``, ``submodule``...), a
word whose value only the shell knows (``$X``, ``$(...)``) and input that cannot be parsed are
all protected, since any of them could be the way in.
"""

from __future__ import annotations

import contextlib
import re
import tomllib
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from planbook.engine.rules.shell_parse import SimpleCommand, Word, parse
from planbook.model.operations import AnyOperation, DeleteFile, EditFile, Shell, WriteFile
from planbook.workspace.settings_guard import PYPROJECT, SETTINGS

__all__ = ["Protected"]

_GIT_DIR = re.compile(r"\.git($|/)")
#: git subcommands that rewrite settings or hooks (not ordinary work such as add or commit).
_GIT_SETTINGS = {"config", "remote", "submodule", "init", "worktree", "hook", "update-index"}
_GIT_READ_CONFIG = {"--get", "--get-all", "--get-regexp", "--list", "-l", "--show-origin"}
#: Programs that delete, move or rewrite what they are given, folders included: naming a folder
#: that holds a protected path (``rm -rf .``, ``find . -delete``) reaches the path inside.
_SWEEPING = {
    "rm",
    "rmdir",
    "mv",
    "cp",
    "chmod",
    "chown",
    "chgrp",
    "shred",
    "truncate",
    "find",
    "rsync",
    "tar",
    "unzip",
    "ln",
    "install",
    "dd",
    "sed",
    "perl",
    "git",
}
_FIND_WRITERS = {"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fls"}


@dataclass(frozen=True)
class Protected:
    """The protected paths of one workspace."""

    root: Path
    notebook: Path | None = None

    @property
    def names(self) -> tuple[str, ...]:
        extra = (self.notebook.name,) if self.notebook is not None else ()
        return (SETTINGS, PYPROJECT, ".git", *extra)

    def reason(self, tool: str, target: str | None) -> str | None:
        """Why a call of ``tool`` on ``target`` (path or command) must be reviewed, or None."""
        if target is None:
            return None
        if tool == "shell":
            return self.shell_reason(target)
        if tool in ("write_file", "edit_file", "delete_file"):
            return self.file_reason(target)
        return None

    def op_reason(self, op: AnyOperation) -> str | None:
        """As ``reason``, and for pyproject.toml also what the change would write."""
        if isinstance(op, Shell):
            return self.shell_reason(op.command)
        if isinstance(op, WriteFile | EditFile | DeleteFile):
            if isinstance(op, WriteFile):
                new = op.content
            elif isinstance(op, EditFile):
                new = "\n".join(e.replace for e in op.edits)
            else:
                new = ""
            return self.file_reason(op.path, new_text=new)
        return None

    # --- files -----------------------------------------------------------------------------
    def file_reason(self, path: str, *, new_text: str = "") -> str | None:
        for candidate in self._paths(path):
            why = self._path_reason(candidate, new_text)
            if why:
                return why
        return None

    def _paths(self, path: str) -> list[Path]:
        """The path as written and where it really leads (a symlink into .git counts)."""
        written = self.root / path
        out = [written]
        with contextlib.suppress(OSError, RuntimeError):  # a loop, a name too long
            out.append(written.resolve())
        return out

    def _path_reason(self, path: Path, new_text: str) -> str | None:
        try:
            rel = PurePosixPath(path.relative_to(self.root).as_posix())
        except ValueError:
            rel = PurePosixPath(path.as_posix())
        # Case-folded: on macOS and Windows `Planbook.TOML` is the same file.
        parts = [part.casefold() for part in rel.parts]
        name = parts[-1] if parts else ""
        if ".git" in parts:
            return f"{rel} is under .git/ (git's settings and hooks run programs)"
        if name == SETTINGS:
            return f"{rel} holds planbook's own permission rules"
        if name == PYPROJECT and (_has_planbook_table(path) or "planbook" in new_text.lower()):
            return f"{rel} has (or would get) planbook's [tool.planbook] rules"
        if self.notebook is not None and path == self.notebook:
            return f"{rel} is the notebook itself"
        return None

    # --- shell -----------------------------------------------------------------------------
    def shell_reason(self, command: str) -> str | None:
        parsed = parse(command)
        if parsed.error:
            return f"the command cannot be read for sure ({parsed.error})"
        words: list[Word] = list(parsed.words)
        programs = {c.words[0].text.rsplit("/", 1)[-1] for c in parsed.commands if c.words}
        moves = bool(programs & {"cd", "pushd"})
        for c in parsed.commands:
            words += [Word(a) for a in c.assignments]
            why = _git_settings(c) or self._sweeping(c, moves)
            if why:
                return why
        for w in words:
            why = self._word_reason(w)
            if why:
                return why
        return None

    def _sweeping(self, command: SimpleCommand, moves: bool) -> str | None:
        """A program that deletes or rewrites what it is given, pointed at a folder that holds
        a protected path (or at the workspace through an implicit `.`)."""
        if not command.words:
            return None
        program = command.words[0].text.rsplit("/", 1)[-1]
        if program not in _SWEEPING:
            return None
        args = [w.text for w in command.words[1:]]
        if program == "git":
            sub = next((a for a in args if not a.startswith("-")), "")
            return (
                f"`git {sub}` can delete planbook.toml or the notebook" if sub == "clean" else None
            )
        if moves:
            return f"`{program}` after `cd`: cannot tell which files it reaches"
        if program == "find" and not set(args) & _FIND_WRITERS:
            return None  # only lists
        if program == "find" and (not args or args[0].startswith("-")):
            return "`find` with no folder works on the whole workspace"
        for text in args:
            if text.startswith("-") or not text:
                continue
            folder = self.root / text
            try:
                real = folder.resolve()
            except (OSError, RuntimeError):
                continue
            if real.is_dir() and any(p == real or real in p.parents for p in self._holds()):
                return f"`{program} {text}` reaches protected settings inside {text}"
        return None

    def _holds(self) -> list[Path]:
        paths = [self.root / ".git", self.root / SETTINGS, self.root / PYPROJECT]
        if self.notebook is not None:
            paths.append(self.notebook)
        return [p for p in paths if p.exists()]

    def _word_reason(self, word: Word) -> str | None:
        text = word.text.casefold()
        if word.dynamic:
            return f"`{text}` is only known when the shell runs it (it could name a protected path)"
        if _GIT_DIR.search(text):
            return f"`{text}` names something under .git/"
        for name in self.names:
            if name.casefold() in text:
                return f"`{text}` names {name}"
        if word.globbed:
            for part in re.split(r"[/=]", text):
                matched = [n for n in self.names if part and fnmatchcase(n.casefold(), part)]
                if matched:
                    return f"the glob `{text}` can match {matched[0]}"
        if text and not text.startswith("-"):
            for candidate in self._paths(word.text)[1:]:
                why = self._path_reason(candidate, "")
                if why:
                    return f"`{text}` leads to a protected path: {why}"
        return None


def _git_settings(command: SimpleCommand) -> str | None:
    words = [w.text for w in command.words]
    if not words or words[0].rsplit("/", 1)[-1] != "git":
        return None
    i = 1
    while i < len(words) and words[i].startswith("-"):
        if words[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace"):
            i += 1
        i += 1
    sub = words[i] if i < len(words) else ""
    if sub not in _GIT_SETTINGS:
        return None
    if sub == "config" and set(words[i + 1 :]) & _GIT_READ_CONFIG:
        return None
    return f"`git {sub}` changes git's settings (.git/)"


def _has_planbook_table(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return "planbook" in text.lower()  # cannot tell: assume it is there
    tool = data.get("tool")
    return isinstance(tool, dict) and "planbook" in tool
