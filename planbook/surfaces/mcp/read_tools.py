"""What the read tools answer: notebooks, cells (with outputs as bounded text and images as MCP
image content), the plan with each step's status and result, and workspace files. Nothing here
writes: the notebook is read through its file document, files through the Workspace (confined
to its root, regular files only, bounded)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ImageContent, TextContent, ToolAnnotations

from planbook.errors import UsageMistake
from planbook.model.cell import Cell
from planbook.model.plan import Plan, Step
from planbook.present.bounded import clip, joined, numbered_lines, summarise_output
from planbook.present.text import step_title
from planbook.sessions.served import ServedNotebooks
from planbook.surfaces.mcp.calls import in_thread
from planbook.surfaces.mcp.limits import CellRef, FilePath, Folder, Lines, Notebook, Offset

#: Cells one read_notebook answer shows; the rest are counted.
MAX_CELLS = 500
#: Characters of one cell's source shown.
SOURCE_CHARS = 6_000
#: Outputs of one cell shown.
MAX_OUTPUTS = 10
#: Images in one answer, and the largest one sent (base64 characters).
MAX_IMAGES = 10
MAX_IMAGE_CHARS = 2_000_000
#: Entries of a folder listing or notebook list.
MAX_ENTRIES = 200
#: Characters of a read_file answer.
READ_CHARS = 20_000
#: The image formats sent as MCP image content.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")

Block = TextContent | ImageContent
#: A notebook's cell by id, or None: how a step's report finds the outputs of the cell it ran.
CellFinder = Callable[[str], Cell | None]


def _text(text: str) -> TextContent:
    return TextContent(type="text", text=text)


def list_notebooks_text(target: ServedNotebooks) -> str:
    found = target.notebooks()
    if not found:
        return f"no notebook (.ipynb) in {target.root}"
    lines = [target.shown(p) for p in found[:MAX_ENTRIES]]
    if len(found) > MAX_ENTRIES:
        lines.append(f"[... {len(found) - MAX_ENTRIES} more]")
    return "\n".join(lines)


def notebook_content(target: ServedNotebooks, notebook: str | None) -> list[Block]:
    path = target.notebook_path(notebook)
    cells = target.cells(path)
    out: list[Block] = [_text(f"{target.shown(path)}: {len(cells)} cells")]
    images = [0]
    for n, cell in enumerate(cells[:MAX_CELLS], start=1):
        out += _cell_content(n, cell, images)
    if len(cells) > MAX_CELLS:
        out.append(_text(f"[... {len(cells) - MAX_CELLS} more cells: read them with read_cell]"))
    return out


def cell_content(target: ServedNotebooks, notebook: str | None, cell: str) -> list[Block]:
    n, found = target.cell(target.notebook_path(notebook), cell)
    return _cell_content(n, found, [0])


def _cell_content(n: int, cell: Cell, images: list[int]) -> list[Block]:
    """The cell as text (position, id, type, execution count, source, outputs summarised),
    followed by its images while the answer has room for them."""
    count = "" if cell.execution_count is None else f" execution_count={cell.execution_count}"
    parts = [f"#{n} id={cell.id} {cell.cell_type}{count}", clip(cell.source, SOURCE_CHARS)]
    if cell.outputs:
        parts.append(f"outputs ({len(cell.outputs)}):")
        parts += [summarise_output(o) for o in cell.outputs[:MAX_OUTPUTS]]
        if len(cell.outputs) > MAX_OUTPUTS:
            parts.append(f"[... {len(cell.outputs) - MAX_OUTPUTS} more outputs]")
    out: list[Block] = [_text("\n".join(parts))]
    for output in cell.outputs[:MAX_OUTPUTS]:
        for mime, data in _images(output):
            if images[0] >= MAX_IMAGES:
                continue
            if len(data) > MAX_IMAGE_CHARS:
                out.append(_text(f"[#{n}: a {mime} image of {len(data):,} characters, not sent]"))
                continue
            images[0] += 1
            out.append(ImageContent(type="image", data=data, mime_type=mime))
    return out


def _images(output: dict[str, Any]) -> list[tuple[str, str]]:
    data = output.get("data") or {}
    if not isinstance(data, dict):
        return []
    return [(m, "".join(joined(data[m]).split())) for m in IMAGE_TYPES if m in data]


def plan_text(target: ServedNotebooks, notebook: str | None) -> str:
    path = target.notebook_path(notebook)
    state = target.state(path)
    name = target.shown(path)
    plan = next((p for p in reversed(state.plans) if p.is_open), None) or (
        state.plans[-1] if state.plans else None
    )
    if plan is None:
        return f"{name}: no plan yet (mode: {state.mode}); propose a change to start one"
    lines = [
        f"{name}: plan {plan.id}" + (f" ({plan.task})" if plan.task else ""),
        f"state: {plan.state.replace('_', ' ')} · mode: {state.mode} · "
        f"revision {plan.current.number}",
    ]
    for n, step in enumerate(plan.steps, start=1):
        lines += step_lines(n, step, plan)
    if not plan.steps:
        lines.append("no steps yet")
    return "\n".join(lines)


def step_lines(n: int, step: Step, plan: Plan, cells: CellFinder | None = None) -> list[str]:
    """One step as read_plan and wait_for_review show it: number, id, what, status, who
    proposed it, why, and what happened when it ran (with ``cells``, a step that ran code
    also shows its cell's outputs: what an agent waits for)."""
    out = [f"{n}. [{step.status}] {step_title(step)} (step id {step.id}, {step.risk} risk)"]
    if step.origin:
        out.append(f"   from: {step.origin}")
    if step.reason:
        out.append(f"   why: {clip(step.reason, 500)}")
    if step.error:
        out.append(f"   ! {clip(step.error, 1000)}")
    results = [r for r in plan.results if r.step_id == step.id]
    if results and results[-1].message:
        out.append(f"   result ({results[-1].status}): {clip(results[-1].message, 4000)}")
    if cells is not None and step.runs_cell and step.status in ("done", "failed"):
        ran = cells(step.operation.cell_id)  # type: ignore[union-attr]
        if ran is not None and ran.outputs:
            out.append(f"   outputs of cell {ran.id[:8]}:")
            out += [f"   {summarise_output(o)}" for o in ran.outputs[:MAX_OUTPUTS]]
    return out


def files_text(target: ServedNotebooks, path: str) -> str:
    return target.listing(path, MAX_ENTRIES)


def file_text(target: ServedNotebooks, path: str, offset: int, limit: int) -> str:
    text = target.read_text(path)
    if text is None:
        raise UsageMistake(f"{path!r} does not exist in the workspace; see list_files")
    return numbered_lines(text, offset, limit, chars=READ_CHARS)


def register(server: MCPServer, target: ServedNotebooks) -> None:
    """The read tools of the notebooks and files (the kernel's variables: kernel_tools.py)."""
    tool = server.tool(annotations=ToolAnnotations(read_only_hint=True))

    @tool
    async def list_notebooks() -> str:
        """List the notebooks this server serves (paths relative to its folder)."""
        return await in_thread(list_notebooks_text, target)

    @tool
    async def read_notebook(notebook: Notebook = None) -> list[Block]:
        """Read a notebook's cells: position (#N), id, type, execution count, source, outputs
        as bounded text and images as image content. Staged steps are not in the cells until
        approved: see read_plan."""
        return await in_thread(notebook_content, target, notebook)

    @tool
    async def read_cell(cell: CellRef, notebook: Notebook = None) -> list[Block]:
        """Read one cell (by id, id prefix, #N or tag): its source, outputs and images."""
        return await in_thread(cell_content, target, notebook, cell)

    @tool
    async def read_plan(notebook: Notebook = None) -> str:
        """Read the notebook's plan: each step's number, id, what it does, status (pending,
        approved, done, failed, rejected, ...), who proposed it, why, and its result."""
        return await in_thread(plan_text, target, notebook)

    @tool
    async def list_files(path: Folder = ".") -> str:
        """List a folder of the workspace (folders end with /)."""
        return await in_thread(files_text, target, path)

    @tool
    async def read_file(path: FilePath, offset: Offset = 0, limit: Lines = 400) -> str:
        """Read a text file of the workspace, with line numbers (bounded: read on with offset)."""
        return await in_thread(file_text, target, path, offset, limit)
