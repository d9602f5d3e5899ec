"""The propose tools: each builds one operation through the notebook session's Proposer (the
same call as ``pb.propose``: cell naming, validation, the policy, protected settings, the base
hash), tagged with the client's origin, and answers with the step it became; where the open
page holds the notebook (a Jupyter server without collaboration), the same call is made by the
page's kernel (kernel_staging.py). No tool here, or anywhere in this server, approves: a staged
step waits for the person."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from planbook.errors import PlanbookError
from planbook.model.plan import Step
from planbook.sessions.served import ServedNotebooks
from planbook.sessions.session import Session
from planbook.surfaces.mcp.calls import client_origin, in_thread, one_line
from planbook.surfaces.mcp.limits import (
    MAX_EDITS,
    Anchor,
    Before,
    CellRef,
    Command,
    Content,
    FilePath,
    Notebook,
    Reason,
    Replace,
    Search,
    Source,
)
from planbook.surfaces.mcp.staged import staged_text

#: A proposal changes nothing until the person approves it; it is not idempotent (each call
#: stages one more step).
_PROPOSES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)


class ClientProposals:
    """The steps one client proposed and the questions it asked through this server, per
    notebook, in order."""

    def __init__(self) -> None:
        self.step_ids: dict[Path, list[str]] = {}
        self.question_ids: dict[Path, list[str]] = {}

    def add(self, notebook: Path, step_id: str) -> None:
        self.step_ids.setdefault(notebook, []).append(step_id)

    def asked(self, notebook: Path, question_id: str) -> None:
        self.question_ids.setdefault(notebook, []).append(question_id)

    def only_notebook(self) -> Path | None:
        """The notebook every proposal and question of this client went to, when there is one."""
        notebooks = {*self.step_ids, *self.question_ids}
        return next(iter(notebooks)) if len(notebooks) == 1 else None


class Proposals:
    """What wait_for_review waits for by default: the steps of the client that waits, never
    another's. A client is its MCP session: over HTTP, where many agents share one Jupyter
    server, the ``Mcp-Session-Id`` the server gave it (a client cannot choose another's); over
    stdio, the one client of the process. The latest ``MAX_CLIENTS`` are remembered."""

    MAX_CLIENTS = 1_000

    def __init__(self) -> None:
        self._clients: OrderedDict[str, ClientProposals] = OrderedDict()

    def of(self, ctx: Context[Any, Any]) -> ClientProposals:
        """The record of the client making this call, made on its first use."""
        key = client_key(ctx)
        mine = self._clients.pop(key, None) or ClientProposals()
        self._clients[key] = mine
        while len(self._clients) > self.MAX_CLIENTS:
            self._clients.popitem(last=False)
        return mine


def client_key(ctx: Context[Any, Any]) -> str:
    """The MCP session of this call: its HTTP session id, or the process's one stdio client."""
    headers = ctx.headers
    return (headers.get("mcp-session-id") if headers is not None else None) or "stdio"


class Edit(BaseModel):
    """One search/replace edit of a file."""

    model_config = ConfigDict(extra="forbid")

    search: Search
    replace: Replace


Edits = Annotated[
    list[Edit],
    Field(min_length=1, max_length=MAX_EDITS, description="Edits applied in order."),
]
RunIt = Annotated[bool, Field(description="Run the cell once approved (code cells only).")]
CellKind = Annotated[
    Literal["code", "markdown", "raw"], Field(description="code, markdown or raw.")
]


def answer(target: ServedNotebooks, session: Session, step: Step) -> str:
    """What the tool answers for ``step``, staged through ``session`` (staged.py)."""
    where = target.shown(session.notebook_path) if session.notebook_path else "the notebook"
    return staged_text(where, session, step)


class PageStaging(Protocol):
    """Where a proposal (or a question: ``ask_person``) goes when the notebook's open page holds
    it (kernel_staging.py): the staged step's (question's) id and the answer, or None when no
    page holds the notebook (the file then)."""

    async def stage(
        self, path: Path, operation: str, arguments: dict[str, Any], origin: str
    ) -> tuple[str, str] | None: ...


async def in_page(
    pages: PageStaging | None,
    target: ServedNotebooks,
    notebook: str | None,
    operation: str,
    arguments: dict[str, Any],
    origin: str,
) -> tuple[Path, str, str] | None:
    """Stage through the open page holding the notebook, when there are pages to ask: the
    notebook, the staged id and the answer; None to stage into the served notebook instead.
    A planbook error is a one-line ToolError."""
    if pages is None:
        return None
    path = await in_thread(target.notebook_path, notebook)
    try:
        staged = await pages.stage(path, operation, arguments, origin)
    except PlanbookError as exc:
        raise ToolError(one_line(exc.said_to("cli"))) from None
    return (path, *staged) if staged is not None else None


def register(
    server: MCPServer,
    target: ServedNotebooks,
    proposals: Proposals,
    pages: PageStaging | None = None,
) -> None:
    async def propose(
        ctx: Context[Any, Any], notebook: str | None, operation: str, **arguments: Any
    ) -> str:
        """Stage ``Proposer.<operation>(**arguments)`` for this client: through the open page
        when one holds the notebook, else through the served notebook's session."""
        origin = client_origin(ctx)
        mine = proposals.of(ctx)
        staged = await in_page(pages, target, notebook, operation, arguments, origin)
        if staged is not None:
            mine.add(staged[0], staged[1])
            return staged[2]

        def work() -> str:
            session = target.session(notebook)
            step = getattr(session.proposing_as(origin), operation)(**arguments)
            mine.add(session.notebook_path or Path(), step.id)
            return answer(target, session, step)

        return await in_thread(work)

    tool = server.tool(annotations=_PROPOSES)

    @tool
    async def propose_insert_cell(
        source: Source,
        reason: Reason,
        ctx: Context[Any, Any],
        cell_type: CellKind = "code",
        after: Anchor = None,
        before: Before = None,
        run: RunIt = False,
        notebook: Notebook = None,
    ) -> str:
        """Propose a new cell after (or before) a cell, or at the end. Staged for review."""
        return await propose(
            ctx,
            notebook,
            "insert_cell",
            source=source,
            after=after,
            before=before,
            cell_type=cell_type,
            reason=reason,
            run=run,
        )

    @tool
    async def propose_edit_cell(
        cell: CellRef,
        source: Source,
        reason: Reason,
        ctx: Context[Any, Any],
        run: RunIt = False,
        notebook: Notebook = None,
    ) -> str:
        """Propose a cell's complete new source. Staged for review."""
        return await propose(
            ctx, notebook, "edit_cell", cell_id=cell, source=source, reason=reason, run=run
        )

    @tool
    async def propose_delete_cell(
        cell: CellRef, reason: Reason, ctx: Context[Any, Any], notebook: Notebook = None
    ) -> str:
        """Propose removing a cell. Staged for review."""
        return await propose(ctx, notebook, "delete_cell", cell_id=cell, reason=reason)

    @tool
    async def propose_move_cell(
        cell: CellRef,
        reason: Reason,
        ctx: Context[Any, Any],
        after: Anchor = None,
        notebook: Notebook = None,
    ) -> str:
        """Propose moving a cell after another one (no `after`: to the top). Staged for review."""
        return await propose(ctx, notebook, "move_cell", cell_id=cell, after=after, reason=reason)

    @tool
    async def propose_run_cell(
        cell: CellRef, reason: Reason, ctx: Context[Any, Any], notebook: Notebook = None
    ) -> str:
        """Propose running a code cell in the notebook's kernel once approved; its outputs are
        stored in the cell."""
        return await propose(ctx, notebook, "run_cell", cell_id=cell, reason=reason)

    @tool
    async def propose_run_code(
        code: Annotated[Source, Field(description="Python code to run in the notebook's kernel.")],
        reason: Reason,
        ctx: Context[Any, Any],
        after: Anchor = None,
        notebook: Notebook = None,
    ) -> str:
        """Propose running code: staged as a new code cell that runs once approved, so the
        code and its outputs stay in the notebook."""
        return await propose(
            ctx,
            notebook,
            "insert_cell",
            source=code,
            after=after,
            cell_type="code",
            reason=reason,
            run=True,
        )

    @tool
    async def propose_write_file(
        path: FilePath,
        content: Content,
        reason: Reason,
        ctx: Context[Any, Any],
        notebook: Notebook = None,
    ) -> str:
        """Propose creating or overwriting a text file of the workspace. Staged for review in
        the notebook's plan."""
        return await propose(ctx, notebook, "write_file", path=path, content=content, reason=reason)

    @tool
    async def propose_edit_file(
        path: FilePath,
        edits: Edits,
        reason: Reason,
        ctx: Context[Any, Any],
        notebook: Notebook = None,
    ) -> str:
        """Propose search/replace edits of a text file of the workspace. Staged for review."""
        pairs = [{"search": e.search, "replace": e.replace} for e in edits]
        return await propose(ctx, notebook, "edit_file", path=path, edits=pairs, reason=reason)

    @tool
    async def propose_delete_file(
        path: FilePath, reason: Reason, ctx: Context[Any, Any], notebook: Notebook = None
    ) -> str:
        """Propose deleting a file of the workspace. Staged for review."""
        return await propose(ctx, notebook, "delete_file", path=path, reason=reason)

    @tool
    async def propose_shell(
        command: Command,
        reason: Reason,
        ctx: Context[Any, Any],
        timeout_s: Annotated[
            float, Field(gt=0, le=3600, description="Seconds before the command is stopped.")
        ] = 60.0,
        notebook: Notebook = None,
    ) -> str:
        """Propose a shell command, run in the workspace folder once approved. Staged for
        review (rollback cannot undo what a command does outside the workspace)."""
        return await propose(
            ctx, notebook, "shell", command=command, reason=reason, timeout=timeout_s
        )
