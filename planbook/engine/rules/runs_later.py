"""Files that run code later: the one list of what auto-edit mode holds for review.

Auto-edit mode's promise is "edits apply, execution waits". A write to some files is execution
that waits only until the person next starts a kernel, loads planbook, opens the folder in an
editor or runs git: a module named like an installed one beside the notebook (``numpy.py``,
``planbook/__init__.py``, ``ipykernel_launcher.py``), a git repository planted in a subfolder
(its ``config`` names an fsmonitor command ``git status`` runs), a ``.pth`` file in an
in-project environment. ``reason`` says why a file change is one of these, or None; the policy
(engine/policy.py) stages such a write in auto-edit mode and applies it, with this line on the
step, in act mode. docs/permissions.md lists the same families.

Three kinds of knowledge, each as cheap as it can be:

- ``FAMILIES``: globs on a workspace-relative path (any folder: ``.vscode/*`` also matches
  ``a/.vscode/x``), compared case-folded, on the path as written and where it really leads;
- what the files say now: the hooks folder ``core.hooksPath`` names and the files
  ``include.path`` / ``includeIf`` pull in (the repository's ``.git/config`` and the person's
  own git config), and a folder laid out as a git directory (``HEAD`` beside ``objects/`` or
  ``refs/``) or as an environment (``pyvenv.cfg``);
- the top-level names importable in this process (the kernel's environment: ``sys.path``
  outside the workspace, built-in and standard-library names, modules already imported),
  computed once per workspace and ``sys.path``.

``planbook.toml`` (or ``[tool.planbook]`` in pyproject.toml) can add globs: ``runs_later =
["tools/*.sh"]``.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import os
import pkgutil
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache
from pathlib import Path, PurePosixPath

from planbook.errors import RulesError
from planbook.model.operations import AnyOperation, EditFile, WriteFile

__all__ = ["FAMILIES", "RUNS_LATER_KEY", "extra_patterns", "reason"]

#: The key in planbook.toml (top level) and in pyproject.toml's [tool.planbook] that adds globs.
RUNS_LATER_KEY = "runs_later"


@dataclass(frozen=True)
class Family:
    """Files that run code later for one reason."""

    name: str
    #: Why, as the end of "PATH: ...".
    why: str
    #: Case-folded globs on the workspace-relative path, matched from any folder down.
    patterns: tuple[str, ...]


FAMILIES: tuple[Family, ...] = (
    Family(
        "git",
        "git reads it as settings or runs it (hooks, fsmonitor, filters, drivers)",
        (
            ".git",
            ".git/*",
            ".gitattributes",
            ".gitmodules",
            # A folder with HEAD (and objects/, refs/) is a git directory to git: its config
            # then runs programs. No git directory exists without HEAD.
            "head",
            "commondir",
            "gitdir",
            "packed-refs",
        ),
    ),
    Family(
        "start-up",
        "Python, IPython or Jupyter runs it when a kernel or server starts",
        (
            "*.pth",
            "sitecustomize.py",
            "usercustomize.py",
            "*.pyc",
            "__pycache__/*",
            "site-packages/*",
            "dist-packages/*",
            "pyvenv.cfg",
            ".ipython/*",
            "profile_*/startup/*",
            "ipython_config.py",
            "ipython_*config.py",
            "ipython_*config.json",
            "jupyter_config.py",
            "jupyter_config.json",
            "jupyter_*config.py",
            "jupyter_*config.json",
            ".jupyter/*",
            "kernels/*/kernel.json",
        ),
    ),
    Family(
        "editor",
        "an editor or a shell tool runs what it says when the folder is opened, entered or "
        "committed",
        (
            ".vscode/*",
            "*.code-workspace",
            ".idea/*",
            ".devcontainer/*",
            ".devcontainer.json",
            ".envrc",
            ".env",
            ".pre-commit-config.yaml",
            # uv takes an interpreter's path from it: a program in the workspace then runs
            ".python-version",
        ),
    ),
)

_SUFFIXES = tuple(importlib.machinery.all_suffixes())
#: Project files that tools run by path, never a module a kernel imports by this name (pytest
#: and a test run may have one of these in ``sys.modules``): ordinary sources, as in the peers.
_PROJECT_SOURCES = frozenset({"conftest", "setup", "noxfile", "manage", "__main__", "__mp_main__"})


def reason(op: AnyOperation, root: Path) -> str | None:
    """Why writing ``op`` (a file write or edit) would run code later without asking, or None.

    Never raises: a planbook.toml that cannot be read is the rules' business (they fail
    closed); here its extra globs are then left out."""
    if not isinstance(op, WriteFile | EditFile):
        return None  # deleting such a file runs nothing; shell steps are asked about anyway
    try:
        extra = extra_patterns(root)
    except RulesError:
        extra = ()
    return path_reason(op.path, root, extra)


def path_reason(path: str, root: Path, extra: tuple[str, ...] = ()) -> str | None:
    base = _real(root)
    for rel in _candidates(path, root, base):
        why = _rel_reason(rel, base, extra)
        if why:
            return f"{rel}: {why}"
    return None


def _real(path: Path) -> Path:
    with contextlib.suppress(OSError, RuntimeError):
        return path.resolve()
    return path


def _candidates(path: str, root: Path, base: Path) -> list[PurePosixPath]:
    """The path as written (normalised: ``./``, ``a/../``) and where it really leads (a
    symlinked folder counts), relative to the workspace."""
    written = os.path.normpath(path.replace("\\", "/"))
    out = [PurePosixPath(Path(written).as_posix())]
    real = _real(root / written)
    with contextlib.suppress(ValueError):
        out.append(PurePosixPath(real.relative_to(base).as_posix()))
    return list(dict.fromkeys(p for p in out if p.parts and p.parts[0] != ".."))


def _rel_reason(rel: PurePosixPath, base: Path, extra: tuple[str, ...]) -> str | None:
    parts = [p.casefold() for p in rel.parts]
    tails = ["/".join(parts[i:]) for i in range(len(parts))]
    for family in FAMILIES:
        if any(fnmatchcase(tail, pattern) for tail in tails for pattern in family.patterns):
            return family.why
    for pattern in extra:
        if fnmatchcase(rel.as_posix(), pattern) or fnmatchcase("/".join(parts), pattern.casefold()):
            return f"matches `{pattern}`, which {RUNS_LATER_KEY} in planbook.toml lists"
    target = base / rel
    for folder in _folders(rel, base):
        if _is_git_dir(folder):
            return (
                f"inside {_shown(folder, base)}, a git directory (git runs what its config names)"
            )
        if (folder / "pyvenv.cfg").is_file():
            return f"inside {_shown(folder, base)}, a Python environment (its code is imported)"
    for place, why in _git_places(base):
        if target == place or place in target.parents:
            return why
    return _shadows(rel, base)


def _folders(rel: PurePosixPath, base: Path) -> Iterator[Path]:
    """The folders that hold ``rel``, the workspace itself included."""
    here = base
    yield here
    for part in rel.parts[:-1]:
        here = here / part
        yield here


def _shown(folder: Path, base: Path) -> str:
    return (folder.relative_to(base).as_posix() + "/") if folder != base else "the workspace"


def _is_git_dir(folder: Path) -> bool:
    return (folder / "HEAD").is_file() and (
        (folder / "objects").is_dir() or (folder / "refs").is_dir()
    )


# --- git's own settings: the hooks path and included files ------------------------------------
def _git_places(base: Path) -> list[tuple[Path, str]]:
    """Paths inside the workspace that git's config names: hooks folders and included files."""
    places: list[tuple[Path, str]] = []
    dot_git = base / ".git"
    configs = [dot_git / "config"]
    if dot_git.is_file():  # a worktree or submodule: `gitdir: PATH`
        with contextlib.suppress(OSError, UnicodeDecodeError):
            line = dot_git.read_text(encoding="utf-8").strip()
            if line.startswith("gitdir:"):
                real = _real(base / line.removeprefix("gitdir:").strip())
                places.append(
                    (real, "the repository's git directory (git runs what its config names)")
                )
                configs = [real / "config"]
    home = Path.home()
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    configs += [home / ".gitconfig", xdg / "git" / "config"]
    seen: set[Path] = set()
    while configs and len(seen) < 20:
        config = _real(configs.pop(0))
        if config in seen:
            continue
        seen.add(config)
        for key, value in _git_config(config):
            if key == "core.hookspath":
                hooks = _real(base / os.path.expanduser(value))
                places.append(
                    (hooks, f"in {value}, the hooks folder core.hooksPath names (git runs them)")
                )
            elif key.endswith(".path") and key.split(".")[0] in ("include", "includeif"):
                included = _real(config.parent / os.path.expanduser(value))
                places.append(
                    (
                        included,
                        f"a file git's config includes ({config.name}): git reads it as settings",
                    )
                )
                configs.append(included)
    return [(p, why) for p, why in places if p == base or base in p.parents]


def _git_config(path: Path) -> list[tuple[str, str]]:
    """``section.key`` and value pairs of a git config file (all this module needs: a missing
    or unreadable file has none). ``[includeIf "gitdir:x"]`` is section ``includeif``; section
    and key names are case-folded, as git compares them."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    out: list[tuple[str, str]] = []
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("[") and "]" in line:
            head = line[1 : line.index("]")].strip()
            section = head.split(" ", 1)[0].split(".", 1)[0].casefold()
            line = line[line.index("]") + 1 :].strip()
        if not line or line[0] in "#;":
            continue
        key, _, value = line.partition("=")
        out.append((f"{section}.{key.strip().casefold()}", _unquote(value.strip())))
    return out


def _unquote(value: str) -> str:
    out, quoted = [], False
    for ch in value:
        if ch == '"':
            quoted = not quoted
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
    return "".join(out).strip()


# --- modules that shadow an importable one --------------------------------------------------
def _shadows(rel: PurePosixPath, base: Path) -> str | None:
    """``NAME.py`` or ``NAME/__init__.py`` in a folder a kernel starts in or imports from,
    where NAME is importable from outside the workspace: the file would be imported instead."""
    parts = rel.parts
    last = parts[-1].casefold()
    if not last.endswith(_SUFFIXES):
        return None
    if last.split(".")[0] != "__init__":
        name, folder = parts[-1].split(".")[0], base.joinpath(*parts[:-1])
    elif len(parts) >= 2:
        name, folder = parts[-2], base.joinpath(*parts[:-2])
    else:
        return None
    if name.casefold() in _PROJECT_SOURCES:
        return None
    if name.casefold() not in importable(str(base), tuple(sys.path)):
        return None
    if not _start_folder(folder, base):
        return None
    return (
        f"a kernel started in {_shown(folder, base)} would import it instead of the "
        f"installed module `{name}`"
    )


def _start_folder(folder: Path, base: Path) -> bool:
    """A folder whose modules a kernel imports first: the workspace, one that holds a
    notebook (Jupyter starts its kernel there), or one on this process's ``sys.path``."""
    if folder == base:
        return True
    with contextlib.suppress(OSError):
        if any(folder.glob("*.ipynb")):
            return True
    return any(_real(Path(entry or ".")) == folder for entry in sys.path)


@cache
def importable(root: str, path: tuple[str, ...]) -> frozenset[str]:
    """Top-level module names (case-folded) this process can import from outside ``root``:
    built-in and standard-library names, every module or package on ``path`` outside the
    workspace, and modules already imported from elsewhere. Cached per workspace and path."""
    base = Path(root)
    names = set(sys.builtin_module_names) | set(sys.stdlib_module_names)
    for entry in path:
        where = _real(Path(entry or "."))
        if where == base or base in where.parents:
            continue  # the project's own modules are its sources, not shadows
        if where.is_dir():
            names.update(_scan(where))
        else:
            with contextlib.suppress(Exception):  # a zip or an egg: let pkgutil read it
                names.update(m.name for m in pkgutil.iter_modules([entry]))
    for name, module in list(sys.modules.items()):
        if "." in name:
            continue
        origin = getattr(module, "__file__", None)
        if origin is None or base not in _real(Path(origin)).parents:
            names.add(name)
    return frozenset(n.casefold() for n in names)


def _scan(folder: Path) -> set[str]:
    names: set[str] = set()
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            stem = entry.name.split(".")[0]
            if not stem.isidentifier():
                continue
            with contextlib.suppress(OSError):
                if entry.is_dir() and entry.name.isidentifier():
                    names.add(entry.name)  # a package, or a namespace package's portion
                elif entry.name.endswith(_SUFFIXES):
                    names.add(stem)
    return names


# --- globs the project adds ------------------------------------------------------------------
_extra_cache: dict[Path, tuple[tuple[object, ...], tuple[str, ...]]] = {}


def extra_patterns(root: Path) -> tuple[str, ...]:
    """The globs ``runs_later`` adds in planbook.toml and pyproject.toml's [tool.planbook];
    a value that is not a list of strings raises ``RulesError`` (one line)."""
    files = (root / "pyproject.toml", root / "planbook.toml")
    key = tuple(_signature(f) for f in files)
    cached = _extra_cache.get(root)
    if cached is not None and cached[0] == key:
        return cached[1]
    found: list[str] = []
    for file in files:
        if not file.is_file():
            continue
        try:
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise RulesError(f"{file.name}: cannot read it ({exc})") from None
        table = data.get("tool", {}).get("planbook", {}) if file.name == "pyproject.toml" else data
        value = table.get(RUNS_LATER_KEY, []) if isinstance(table, dict) else []
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise RulesError(
                f"{file.name}: `{RUNS_LATER_KEY}` must be a list of path globs, such as "
                '`runs_later = ["tools/*.sh"]`'
            )
        found += [v.replace("\\", "/").removeprefix("./") for v in value]
    result = tuple(found)
    _extra_cache[root] = (key, result)
    return result


def _signature(path: Path) -> object:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)
