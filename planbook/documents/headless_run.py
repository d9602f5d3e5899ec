"""Which notebook a headless run executes (``jupyter nbconvert --execute``, ``papermill``,
``jupyter execute``), and which notebook file that run writes when it ends.

None of these tools tells the kernel which notebook it runs (no ``JPY_SESSION_NAME``, no cell
ids in the execute requests). The tool starts the kernel itself, so the kernel's parent process
(``JPY_PARENT_PID``, set by jupyter_client's launcher) is the tool, and its command line, read
from ``/proc``, names the input and, with its options, the file the tool writes when the run
ends (nbconvert's ``--inplace`` writes over the input, which would drop planbook's changes).
It is read by hand: importing a tool's own parser costs seconds at ``%load_ext``, so
tests/test_headless_argv.py checks each reading against the tool's parser instead. Where
nothing names it (the tools' Python APIs, a system without ``/proc``), ``PLANBOOK_NOTEBOOK``
or papermill's injected ``PAPERMILL_INPUT_PATH`` parameter does.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The environment variable that names the notebook where nothing else can.
NOTEBOOK_ENV = "PLANBOOK_NOTEBOOK"
HOW_TO_NAME = (
    f"name it with {NOTEBOOK_ENV}=path/to/notebook.ipynb in the run's environment "
    "(or planbook.session(notebook='path/to/notebook.ipynb'))"
)
#: How people type each tool, by the name of its script or module.
TOOLS = {
    "jupyter-nbconvert": "jupyter nbconvert",
    "nbconvert": "jupyter nbconvert",
    "papermill": "papermill",
    "jupyter-execute": "jupyter execute",
    "nbclient": "jupyter execute",
}


@dataclass(frozen=True)
class HeadlessRun:
    """A headless run and the notebook it executes."""

    tool: str
    """How the run was started, as a person types it (``jupyter nbconvert``)."""
    notebook: Path
    """The notebook the run executes (absolute): the file planbook edits."""
    writes: Path | None
    """The notebook file the tool writes when the run ends (absolute), or None."""
    named_by: str = ""
    """What named the notebook when the tool's command line did not."""

    @property
    def overwrites(self) -> bool:
        """Does the tool's final write replace the file planbook edits (``--inplace``)?"""
        return self.writes is not None and _same(self.writes, self.notebook)

    def why(self) -> str:
        """The clause for the document's description: where the path came from and where the
        tool writes."""
        source = self.named_by or f"the input of `{self.tool}`"
        if self.writes is None or self.overwrites:
            return source
        copy = self.writes.name
        return f"{source}; {self.tool} writes its own copy to {copy}, without planbook's changes"

    def overwrite_warning(self) -> str:
        """One line for the load output: planbook saves nothing during this run, and why."""
        return (
            f"{self.tool} writes its own copy over {self.notebook.name} when this run ends, "
            f"so planbook refuses to save changes during it; {self._keep()} to keep them"
        )

    def _keep(self) -> str:
        if self.tool == "papermill":
            return "give papermill another output path"
        return f"give {self.tool} another output (`--output NAME`, not --inplace)"

    def overwrite_refusal(self) -> str:
        """One line: why planbook saves nothing during this run, and which options keep it."""
        name = self.notebook.name
        return (
            f"refused: {self.tool} writes its own copy over {name} when this run ends, which "
            f"would drop this change; nothing was saved: {self._keep()} (planbook's changes "
            f"then stay in {name}), or approve after the run with `planbook approve {name}`"
        )


@dataclass(frozen=True)
class Unnamed:
    """A headless run whose notebook planbook cannot tell."""

    reason: str
    """One line: what is unclear, and how to name the notebook."""


def find_run(user_ns: dict[str, Any] | None = None) -> HeadlessRun | Unnamed | None:
    """The headless run this kernel belongs to; ``Unnamed`` when a tool runs it but the
    notebook is unclear; None when this kernel was not started by one of these tools and
    nothing names a notebook."""
    parent = _parent_command()
    run = parse_command(*parent) if parent else None
    named = _named_notebook(user_ns)
    if named is None:
        return run
    path, by = named
    if not path.is_file():
        return Unnamed(f"{by} names {str(path)!r}, which is not a file; {HOW_TO_NAME}")
    tool = run.tool if isinstance(run, HeadlessRun) else by
    writes = run.writes if isinstance(run, HeadlessRun) else None
    if isinstance(run, HeadlessRun) and not _same(run.notebook, path):
        writes = None  # the tool writes another notebook than the one named
    return HeadlessRun(tool, path, writes, named_by=f"named by {by}")


def _named_notebook(user_ns: dict[str, Any] | None) -> tuple[Path, str] | None:
    env = os.environ.get(NOTEBOOK_ENV)
    if env:
        return Path(env).expanduser().resolve(), NOTEBOOK_ENV
    injected = (user_ns or {}).get("PAPERMILL_INPUT_PATH")
    if isinstance(injected, str) and _local(injected):
        return Path(injected).expanduser().resolve(), "papermill's PAPERMILL_INPUT_PATH"
    return None


def _parent_command() -> tuple[list[str], Path] | None:
    """The command line and working directory of the process that started this kernel."""
    pid = os.environ.get("JPY_PARENT_PID") or str(os.getppid())
    try:
        raw = Path(f"/proc/{int(pid)}/cmdline").read_bytes()
        cwd = Path(os.readlink(f"/proc/{int(pid)}/cwd"))
    except (OSError, ValueError):
        return None  # no /proc (macOS, Windows), or the parent is gone
    args = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
    return args, cwd


def parse_command(args: Sequence[str], cwd: Path) -> HeadlessRun | Unnamed | None:
    """The run a tool's command line (``args`` as in /proc, ``cwd`` where it runs) starts."""
    found = _tool_arguments(args)
    if found is None:
        return None
    tool, rest = found
    try:
        if tool == "papermill":
            return _papermill(rest, cwd)
        if tool == "jupyter execute":
            return _jupyter_execute(rest, cwd)
        return _nbconvert(rest, cwd)
    except (ValueError, KeyError, IndexError) as exc:  # an output pattern we cannot format
        return Unnamed(f"{tool}'s command line could not be read ({exc}); {HOW_TO_NAME}")


def _tool_arguments(args: Sequence[str]) -> tuple[str, list[str]] | None:
    for i, arg in enumerate(args[:3]):
        name = Path(arg).name.removesuffix(".exe").removesuffix("-script.py")
        if arg == "-m" and i + 1 < len(args):
            module = args[i + 1].split(".")[0]
            if module in TOOLS and args[i + 1] in (module, "nbclient.cli"):
                return TOOLS[module], list(args[i + 2 :])
        elif name in TOOLS and name != "nbclient":
            return TOOLS[name], list(args[i + 1 :])
    return None


#: The command-line options of each tool that take a value (the rest are flags), as the tool's
#: own parser declares them: nbconvert's and nbclient's traitlets aliases (and any
#: ``--Class.trait``), papermill's click options with their arity. Read here by hand because
#: importing a tool's parser (nbformat and its JSON schema validator with it) takes seconds at
#: ``%load_ext``; tests/test_headless_argv.py checks these readings against the tools' parsers.
NBCONVERT_VALUES = frozenset(
    {"config", "log-level", "nbformat", "output", "output-dir", "post", "reveal-prefix"}
    | {"sanitize_html", "template", "template-file", "theme", "to", "writer"}
)
NBCLIENT_VALUES = frozenset({"kernel_name", "output", "startup_timeout", "timeout"})
PAPERMILL_VALUES = {
    **dict.fromkeys(["-p", "--parameters", "-r", "--parameters_raw"], 2),
    **dict.fromkeys(
        ["-f", "--parameters_file", "-y", "--parameters_yaml", "-b", "--parameters_base64"], 1
    ),
    **dict.fromkeys(["--engine", "--autosave-cell-every", "-k", "--kernel", "-l"], 1),
    **dict.fromkeys(["--language", "--cwd", "--stdout-file", "--stderr-file"], 1),
    **dict.fromkeys(["--log-level", "--start-timeout", "--start_timeout"], 1),
    **dict.fromkeys(["--execution-timeout"], 1),
}


def scan_args(args: Sequence[str], arity: Callable[[str], int]) -> tuple[list[str], dict[str, str]]:
    """Positional arguments and ``{option: value}`` (the name without its dashes; a flag's
    value is "") of a command line: ``--name value`` takes ``arity("--name")`` values (joined
    by spaces), ``--name=value`` none, ``-- rest`` is all positional. One scanner for both
    kinds of tool: traitlets (nbconvert, nbclient) and click (papermill) differ only in which
    options take values and how many."""
    positional: list[str] = []
    options: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            positional += args[i:]
            break
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            continue
        name, eq, value = arg.partition("=")
        if not eq:
            taken = arity(name)
            value, i = " ".join(args[i : i + taken]), i + taken
        options[name.lstrip("-")] = value
    return positional, options


def traitlets_arity(values: frozenset[str]) -> Callable[[str], int]:
    """A traitlets app's options: its aliases in ``values`` and any ``--Class.trait`` take one
    value, the rest are flags."""
    return lambda option: int(option.lstrip("-") in values or "." in option)


def _nbconvert(args: list[str], cwd: Path) -> HeadlessRun | Unnamed:
    patterns, options = scan_args(args, traitlets_arity(NBCONVERT_VALUES))
    notebook = _the_notebook("jupyter nbconvert", _glob(patterns, cwd))
    if isinstance(notebook, Unnamed):
        return notebook
    export = options.get("to", options.get("NbConvertApp.export_format", ""))
    base = options.get("output", options.get("NbConvertApp.output_base", "{notebook_name}"))
    build = options.get("output-dir", options.get("FilesWriter.build_directory", ""))
    writer = options.get("writer", options.get("NbConvertApp.writer_class", ""))
    suffix = options.get("NbConvertApp.use_output_suffix", "True").lower() == "true"
    if "inplace" in options:
        export, build, suffix = "notebook", "", False
    if "stdout" in options:
        writer = "StdoutWriter"
    if export != "notebook" or "stdout" in writer.lower():
        return HeadlessRun("jupyter nbconvert", notebook, None)
    stem = base[: -len(".ipynb")] if base.endswith(".ipynb") else base
    name = stem.format(notebook_name=notebook.stem)
    if suffix and not build and base == "{notebook_name}":
        name += ".nbconvert"
    folder = (cwd / build) if build else notebook.parent
    return HeadlessRun("jupyter nbconvert", notebook, (folder / f"{name}.ipynb").resolve())


def _jupyter_execute(args: list[str], cwd: Path) -> HeadlessRun | Unnamed:
    names, options = scan_args(args, traitlets_arity(NBCLIENT_VALUES))
    paths = [(cwd / p).with_suffix(".ipynb").resolve() for p in names]
    notebook = _the_notebook("jupyter execute", paths)
    if isinstance(notebook, Unnamed):
        return notebook
    base = options.get("output", options.get("NbClientApp.output_base", ""))
    writes = None
    if "inplace" in options:
        writes = notebook
    elif base:
        writes = (notebook.parent / base.format(notebook_name=notebook.stem)).with_suffix(".ipynb")
    return HeadlessRun("jupyter execute", notebook, writes)


def _papermill(args: list[str], cwd: Path) -> HeadlessRun | Unnamed:
    positional, _ = scan_args(args, lambda option: PAPERMILL_VALUES.get(option, 0))
    source, target = [*positional, "", ""][:2]
    if not _local(source):
        where = source or "its notebook"
        return Unnamed(f"papermill reads {where!r}, not a local file; {HOW_TO_NAME}")
    notebook = _the_notebook("papermill", [(cwd / source).resolve()])
    if isinstance(notebook, Unnamed):
        return notebook
    writes = (cwd / target).resolve() if _local(target) else None
    return HeadlessRun("papermill", notebook, writes)


def _glob(patterns: Sequence[str], cwd: Path) -> list[Path]:
    """nbconvert's own expansion of its arguments (a pattern, with or without .ipynb)."""
    found: list[Path] = []
    for pattern in patterns:
        for name in [
            *glob.glob(pattern, root_dir=cwd),
            *glob.glob(pattern + ".ipynb", root_dir=cwd),
        ]:
            path = (cwd / name).resolve()
            if path not in found:
                found.append(path)
    return found


def _the_notebook(tool: str, paths: list[Path]) -> Path | Unnamed:
    """The one notebook of ``paths`` this kernel runs: the tool starts one kernel per
    notebook, in the notebook's folder."""
    paths = [p for p in paths if p.is_file()]
    if len(paths) > 1:
        here = Path.cwd().resolve()
        paths = [p for p in paths if p.parent == here] or paths
    if len(paths) == 1:
        return paths[0]
    if not paths:
        return Unnamed(
            f"this kernel runs under {tool}, whose notebook was not found; {HOW_TO_NAME}"
        )
    names = ", ".join(p.name for p in paths[:4]) + (", ..." if len(paths) > 4 else "")
    return Unnamed(
        f"this kernel runs under {tool} with {len(paths)} notebooks ({names}) and cannot tell "
        f"which one it executes; {HOW_TO_NAME}"
    )


def _local(path: str) -> bool:
    return bool(path) and path != "-" and "://" not in path


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:
        return False


def started_by_a_tool() -> bool:
    """Did one of the headless tools (nbconvert, papermill, jupyter execute) start this kernel?
    One read of the parent's command line, nothing parsed past the tool's name: cheap enough
    for ``%load_ext planbook``, which must not open a comm nobody answers (the tools log it)."""
    parent = _parent_command()
    return parent is not None and _tool_arguments(parent[0]) is not None


def named_notebook(user_ns: dict[str, Any] | None) -> Path | None:
    """The notebook ``PLANBOOK_NOTEBOOK`` or papermill's parameter names, if any."""
    named = _named_notebook(user_ns)
    return named[0] if named else None
