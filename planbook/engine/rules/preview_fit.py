"""Can a shell command be previewed, and is it one to preview on its own when staged?

A preview runs the command once in the read-only sandbox with the workspace as an overlay: no
network, nothing of the disk but the workspace and the system's programs. So a command that
needs the network (``curl``, ``git fetch``, ``pip install`` from an index) or names a path
outside the workspace (``/home/me/data.csv``, ``~/.config``) cannot show what it would do: it
says so ("preview not possible: ...") and is reviewed as before.

*Short and local* commands are previewed as soon as they are staged (``[preview] auto`` in
planbook.toml, on by default): every program one of the file tools that finish at once
(``sed``, ``mv``, ``tar``, ``git checkout``...), nothing that fetches or builds.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from planbook.engine.rules.shell_parse import SimpleCommand, parse

__all__ = ["auto_preview_on", "is_short_and_local", "why_not_previewable"]

#: Programs that reach the network whatever their arguments.
_NETWORK = {
    "curl",
    "wget",
    "ssh",
    "scp",
    "sftp",
    "rsync",
    "nc",
    "ncat",
    "telnet",
    "ftp",
    "apt",
    "apt-get",
    "brew",
    "npm",
    "npx",
    "yarn",
    "pnpm",
    "conda",
    "mamba",
    "docker",
    "podman",
    "gh",
    "huggingface-cli",
    "aws",
    "gcloud",
    "kubectl",
}
_GIT_NETWORK = {"fetch", "pull", "push", "clone", "ls-remote", "submodule"}
#: Programs that finish at once and touch only the files they are given.
_QUICK = {
    "sed",
    "mv",
    "cp",
    "rm",
    "rmdir",
    "mkdir",
    "touch",
    "chmod",
    "ln",
    "tar",
    "gzip",
    "gunzip",
    "zip",
    "unzip",
    "echo",
    "printf",
    "cat",
    "head",
    "tail",
    "sort",
    "uniq",
    "tr",
    "cut",
    "awk",
    "tee",
    "truncate",
    "patch",
    "find",
    "xargs",
    "true",
    "false",
    "test",
    "[",
    "cd",
    "git",
    "install",
    "split",
    "wc",
    "grep",
    "ls",
}
#: Folders the sandbox shows (read-only): naming them needs no preview warning. Not /tmp: the
#: sandbox's own is private and empty.
_SHOWN = ("/usr/", "/bin/", "/lib", "/etc/", "/dev/", "/proc/")


def _needs_network(command: SimpleCommand) -> str:
    name = command.name.text if command.name else ""
    words = [w.text for w in command.words[1:]]
    if name in _NETWORK:
        return f"`{name}` reaches the network"
    if name == "git" and any(w in _GIT_NETWORK for w in words):
        return "`git` " + next(w for w in words if w in _GIT_NETWORK) + " reaches the network"
    pip = name in ("pip", "pip3", "uv") or (name.startswith("python") and "pip" in words[:2])
    offline = any(w == "--no-index" or w.startswith("--find-links") for w in words)
    if pip and "install" in words and not offline:
        return "`pip install` from a package index reaches the network"
    return ""


def why_not_previewable(command: str, root: Path) -> str:
    """ "" when a preview can show what ``command`` does; else one line starting with
    "preview not possible:"."""
    parsed = parse(command)
    for simple in parsed.commands:
        reason = _needs_network(simple)
        if reason:
            return f"preview not possible: {reason}, and a preview has no network"
    for word in parsed.words:
        text = word.text
        if text.startswith("~"):
            return f"preview not possible: it names {text!r}, outside what the sandbox shows"
        # Only a path that exists counts (`sed '/two/d'` names none); the sandbox shows the
        # workspace and the system's folders, nothing else of the disk.
        outside = text.startswith("/") and not text.startswith(str(root))
        if outside and not text.startswith(_SHOWN) and os.path.lexists(text):
            return f"preview not possible: it names {text!r}, outside what the sandbox shows"
    return ""


def is_short_and_local(command: str, root: Path) -> bool:
    """Every program a quick file tool, no network, nothing outside the workspace named."""
    parsed = parse(command)
    if parsed.error is not None or not parsed.commands:
        return False
    if parsed.features & {"background", "function", "control", "substitution"}:
        return False
    names = {c.name.text for c in parsed.commands if c.name is not None}
    return names <= _QUICK and not why_not_previewable(command, root)


def auto_preview_on(root: Path) -> bool:
    """``[preview] auto`` in the project's planbook.toml (on when absent or unreadable)."""
    try:
        data = tomllib.loads((root / "planbook.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return True
    table = data.get("preview")
    if isinstance(table, dict) and isinstance(table.get("auto"), bool):
        return bool(table["auto"])
    return True
