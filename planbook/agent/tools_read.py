"""Read tools: they run at once in every mode, and their answers are bounded.

Files are read through the session's workspace (confined to its root: ``..``, absolute paths and
symlinks that leave it are refused). Shell commands run here only when the classifier is sure
they are read-only (anything else must be proposed with the ``shell`` write tool), and even then
inside the OS sandbox (planbook/workspace/sandbox.py): the workspace read-only, nothing else of the
disk
but system directories, no network, bounded output and time. Where no sandbox can start, the
command is staged like any other instead, and the session's warnings say why.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re

from pydantic_ai import RunContext

from planbook.agent.context import AgentDeps
from planbook.agent.inspect_var import user_namespace
from planbook.agent.staging import propose_shell
from planbook.engine.rules.classifier import classify
from planbook.errors import PlanbookError, UnknownCell
from planbook.present.bounded import clip, numbered_lines, summarise_output
from planbook.present.variables import describe
from planbook.workspace.sandbox import probe
from planbook.workspace.walk import folder_listing, walk_files

CELL_SOURCE_LIMIT = 6000
MAX_ENTRIES = 200
MAX_MATCHES = 100
READ_LIMIT = 20_000


async def list_cells(ctx: RunContext[AgentDeps]) -> str:
    """List the notebook's cells: id, type, execution count and first line.

    Cells staged in the plan but not approved are not in the notebook yet.
    """
    cells = ctx.deps.session.cells()
    if not cells:
        return "the notebook has no cells"
    lines = []
    for n, cell in enumerate(cells[:MAX_ENTRIES], start=1):
        first = next((x for x in cell.source.splitlines() if x.strip()), "")
        count = f" [{cell.execution_count}]" if cell.execution_count is not None else ""
        more = len(cell.source.splitlines())
        lines.append(f"{n}. id={cell.id} {cell.cell_type}{count} ({more} lines): {first[:100]}")
    if len(cells) > MAX_ENTRIES:
        lines.append(f"[... {len(cells) - MAX_ENTRIES} more cells]")
    return "\n".join(lines)


async def read_cell(ctx: RunContext[AgentDeps], cell_id: str) -> str:
    """Read one cell: its full source and a bounded summary of its outputs.

    Args:
        cell_id: The cell's id, as shown by list_cells.
    """
    # heavy: pydantic-ai (the agent extra)
    from pydantic_ai import ModelRetry

    cells = {c.id: c for c in ctx.deps.session.cells()}
    cell = cells.get(cell_id)
    if cell is None:
        raise ModelRetry(str(UnknownCell(cell_id)) + "; call list_cells for the ids")
    parts = [
        f"id={cell.id} type={cell.cell_type} execution_count={cell.execution_count}",
        "source:",
        clip(cell.source, CELL_SOURCE_LIMIT),
    ]
    if cell.outputs:
        parts.append(f"outputs ({len(cell.outputs)}):")
        parts += [summarise_output(o) for o in cell.outputs[:10]]
    return "\n".join(parts)


async def list_files(ctx: RunContext[AgentDeps], path: str = ".") -> str:
    """List a folder of the workspace (names; folders end with /).

    Args:
        path: Folder relative to the workspace root.
    """
    return folder_listing(ctx.deps.session.workspace, path, MAX_ENTRIES)


async def glob_files(ctx: RunContext[AgentDeps], pattern: str) -> str:
    """Find files by glob pattern, such as `*.csv` or `data/**/*.py`, in the workspace.

    Args:
        pattern: A glob matched against paths relative to the workspace root.
    """
    ws = ctx.deps.session.workspace
    files = await asyncio.to_thread(walk_files, ws.root, ws.root)
    rel = [p.relative_to(ws.root).as_posix() for p in files]
    flat = "/" not in pattern
    hits = [r for r in rel if fnmatch.fnmatch(r.rsplit("/", 1)[-1] if flat else r, pattern)]
    if not hits:
        return f"no file matches {pattern!r}"
    out = hits[:MAX_ENTRIES]
    return "\n".join(out) + (
        f"\n[... {len(hits) - MAX_ENTRIES} more]" if len(hits) > len(out) else ""
    )


async def grep_files(
    ctx: RunContext[AgentDeps], regex: str, path: str = ".", include: str = "*"
) -> str:
    """Search text files of the workspace for a regular expression; answers path:line: text.

    Args:
        regex: A Python regular expression.
        path: Folder (or file) to search, relative to the workspace root.
        include: Only files whose name matches this glob, such as `*.py`.
    """
    # heavy: pydantic-ai (the agent extra)
    from pydantic_ai import ModelRetry

    try:
        rx = re.compile(regex)
    except re.error as exc:
        raise ModelRetry(f"invalid regular expression {regex!r}: {exc}") from None
    ws = ctx.deps.session.workspace
    start = ws.resolve(path)

    def search() -> list[str]:
        files = [start] if start.is_file() else walk_files(ws.root, start)
        hits: list[str] = []
        for f in files:
            if not fnmatch.fnmatch(f.name, include):
                continue
            rel = f.relative_to(ws.root).as_posix()
            try:  # through the workspace: regular files only (a FIFO would block), bounded
                text = ws.read_text(rel) or ""
            except PlanbookError:
                continue
            for n, line in enumerate(text.splitlines(), start=1):
                if rx.search(line):
                    hits.append(f"{rel}:{n}: {line.strip()[:200]}")
                    if len(hits) > MAX_MATCHES:
                        return hits
        return hits

    hits = await asyncio.to_thread(search)
    if not hits:
        return f"no match for {regex!r}"
    more = "\n[... more matches: narrow the search]" if len(hits) > MAX_MATCHES else ""
    return "\n".join(hits[:MAX_MATCHES]) + more


async def read_file(
    ctx: RunContext[AgentDeps], path: str, offset: int = 0, limit: int = 400
) -> str:
    """Read a text file of the workspace, with line numbers.

    Args:
        path: Path relative to the workspace root.
        offset: First line to show (0-based).
        limit: How many lines to show at most.
    """
    text = await asyncio.to_thread(ctx.deps.session.workspace.read_text, path)
    if text is None:
        return f"{path!r} does not exist"
    return numbered_lines(text, offset, limit, chars=READ_LIMIT)


async def inspect_variable(ctx: RunContext[AgentDeps], name: str) -> str:
    """Describe a variable of the user's kernel: type, shape, dtypes, columns, head (bounded).

    Nothing is evaluated: give a plain variable name.

    Args:
        name: The variable's name, such as `df`.
    """
    return describe(name, user_namespace(ctx.deps.session))


async def run_read_only_shell(ctx: RunContext[AgentDeps], command: str) -> str:
    """Run a read-only shell command in the workspace root (ls, cat, grep, git status, ...).

    Only commands that are certainly read-only run here; propose anything else with `shell`.

    Args:
        command: The command line.
    """
    verdict = classify(command)
    if not verdict.read_only:
        return (
            f"not run: {verdict.reason}. Only certainly read-only commands run at once; "
            "propose this one with the `shell` tool, which goes through the plan"
        )
    if ctx.deps.rules.decide("shell", command) == "deny":
        return "not run: a permission rule denies this command"
    sandbox = await asyncio.to_thread(probe)
    if not sandbox.available:
        return await _stage_without_sandbox(ctx, command, sandbox.reason)
    result = await asyncio.to_thread(
        ctx.deps.session.workspace.run_shell, command, timeout=30, sandboxed=True
    )
    status = "timed out" if result.timed_out else f"exit {result.returncode}"
    out = clip(result.stdout, 8000)
    err = clip(result.stderr, 2000)
    return f"[{status}]\n{out}" + (f"\n[stderr]\n{err}" if err.strip() else "")


def no_sandbox_warning(reason: str) -> str:
    return f"{reason}; every shell command the agent wants to run is staged for review instead"


async def _stage_without_sandbox(ctx: RunContext[AgentDeps], command: str, reason: str) -> str:
    """No sandbox to hold the command: it goes through the plan like any other (staged in plan
    mode, asked in ask mode), and the person is told why in the session's warnings."""
    warning = no_sandbox_warning(reason)
    session = ctx.deps.session
    if warning not in session.warnings:
        session.warnings.append(warning)
        ctx.deps.say("status", f"planbook: {warning}")
    answer = await propose_shell(
        ctx, command, f"read-only command, not run at once: {reason}", timeout=30
    )
    return f"not run at once ({reason}).\n{answer}"


READ_TOOLS = [
    list_cells,
    read_cell,
    list_files,
    glob_files,
    grep_files,
    read_file,
    inspect_variable,
    run_read_only_shell,
]
