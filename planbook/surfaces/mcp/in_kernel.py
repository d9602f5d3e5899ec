"""What the MCP endpoint runs inside a notebook's kernel when the open page holds the notebook
(a Jupyter server without collaboration): stage a client's proposal through the kernel's own
session, which edits the page through the in-cell review's comm, so the step shows on its cell
at once and the page's next save keeps it; and give the page's notebook back for reading.

Each function is called by one silent user expression the endpoint builds (kernel_staging.py)
with ONE argument, a string literal holding a JSON request: the client's words are data, parsed
here by pydantic, never code. Each answers JSON text (``{"status": ..., ...}``); a planbook
error is one line in it. Nothing here opens the kernel's notebook, loads anything into the
person's namespace or prints: it acts only on the session a page's link or a magic opened.
This module imports nothing of the MCP SDK (the kernel may not have it).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planbook.errors import PlanbookError
from planbook.sessions.page_copy import attached_page, awaits_page, page_text
from planbook.surfaces import api
from planbook.surfaces.api import NotebookSession
from planbook.surfaces.mcp.staged import staged_text

#: The Proposer calls a client may stage this way (the propose tools' operations), and its
#: question to the person (ask_person: the Session's call of that name).
Operation = Literal[
    "ask_person",
    "insert_cell",
    "edit_cell",
    "delete_cell",
    "move_cell",
    "run_cell",
    "write_file",
    "edit_file",
    "delete_file",
    "shell",
]
Status = Literal["staged", "expired", "no_page", "no_link", "elsewhere", "error", "page"]


class PageRequest(BaseModel):
    """Which notebook the endpoint means: its absolute path, and as the client names it."""

    model_config = ConfigDict(extra="forbid")

    notebook: str = Field(min_length=1, max_length=4096)
    shown: str = Field(min_length=1, max_length=4096)


class StageRequest(PageRequest):
    """One proposal: the Proposer call, its arguments (checked by the MCP tool's schema on the
    endpoint, again by the Proposer here), the client's origin, and when the endpoint stops
    waiting (a request a busy kernel reaches later stages nothing)."""

    operation: Operation
    arguments: dict[str, Any]
    origin: str = Field(max_length=200)
    expires: float


def _said(status: Status, **more: Any) -> str:
    return json.dumps({"status": status, **more})


def _session_on(asked: PageRequest) -> NotebookSession | str:
    """The kernel's session on the asked notebook, or the status saying why there is none."""
    session = api.kernel_session_if_open()
    if session is None:
        return _said("no_page")
    path = session.notebook_path
    if path is None or path.resolve() != Path(asked.notebook).resolve():
        where = path.name if path is not None else "no notebook file"
        return _said("elsewhere", message=f"planbook in this kernel edits {where}")
    if attached_page(session) is None:
        return _said("no_link" if awaits_page(session) else "no_page")
    return session


def stage(request: str) -> str:
    """Stage the proposal ``request`` (StageRequest JSON) through the kernel's session."""
    try:
        asked = StageRequest.model_validate_json(request)
    except ValidationError as exc:
        return _said("error", message=f"a malformed staging request ({exc.error_count()} errors)")
    if time.time() > asked.expires:
        return _said("expired")
    found = _session_on(asked)
    if isinstance(found, str):
        return found
    try:
        if asked.operation == "ask_person":
            question = found.ask_person(**asked.arguments, origin=asked.origin)
            return _said("staged", step_id=question.id, text="")
        proposer = found.proposing_as(asked.origin)
        step = getattr(proposer, asked.operation)(**asked.arguments)
    except PlanbookError as exc:
        return _said("error", message=" ".join(exc.said_to("cli").split()))
    except TypeError as exc:  # an argument the Proposer does not take
        return _said("error", message=f"{asked.operation}: {exc}")
    return _said("staged", step_id=step.id, text=staged_text(asked.shown, found, step))


def page(request: str) -> str:
    """The page's notebook (PageRequest JSON names it) as notebook JSON, for reading."""
    try:
        asked = PageRequest.model_validate_json(request)
    except ValidationError:
        return _said("error", message="a malformed page request")
    found = _session_on(asked)
    if isinstance(found, str):
        return found
    attached = attached_page(found)
    assert attached is not None  # _session_on checked it
    return _said("page", notebook=page_text(attached))
