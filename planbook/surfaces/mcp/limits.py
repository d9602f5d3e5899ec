"""Bounds on what an MCP client may send: every string argument has a maximum length and every
list a maximum size, declared in the tool's schema, so an oversized request is refused (one
line, nothing changed) before it reaches the engine."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

#: A notebook or file path, or a cell named by id, id prefix, ``#N`` or tag.
NAME_CHARS = 1_000
#: Why the agent wants a change.
REASON_CHARS = 4_000
#: A cell's source or a file's content (a notebook file holds at most a few MB).
TEXT_CHARS = 1_000_000
#: A shell command line.
COMMAND_CHARS = 20_000
#: Search/replace edits in one edit_file proposal.
MAX_EDITS = 100
#: Longest wait for the person's review in one call (clients often time out sooner).
MAX_WAIT_SECONDS = 3_600.0
#: Steps one wait_for_review call may name.
MAX_WAITED_STEPS = 500
#: Lines of a file one read_file call shows at most.
MAX_READ_LINES = 2_000

Notebook = Annotated[
    str | None,
    Field(
        max_length=NAME_CHARS,
        description=(
            "The notebook, as a path relative to the served folder (see list_notebooks); "
            "leave it out when the server serves one notebook."
        ),
    ),
]
CellRef = Annotated[
    str,
    Field(
        min_length=1,
        max_length=NAME_CHARS,
        description="A cell: its id, a unique id prefix, its position like `#3`, or a tag.",
    ),
]
Anchor = Annotated[
    str | None,
    Field(
        max_length=NAME_CHARS,
        description="A cell (id, id prefix, `#N` or tag) to place it after; none: the end.",
    ),
]
Before = Annotated[
    str | None,
    Field(max_length=NAME_CHARS, description="A cell to place it before instead of after."),
]
Reason = Annotated[
    str,
    Field(
        min_length=1,
        max_length=REASON_CHARS,
        description="Why you want this change: the person reads it when reviewing the step.",
    ),
]
Source = Annotated[str, Field(max_length=TEXT_CHARS, description="The cell's complete source.")]
Content = Annotated[str, Field(max_length=TEXT_CHARS, description="The file's complete text.")]
FilePath = Annotated[
    str,
    Field(
        min_length=1,
        max_length=NAME_CHARS,
        description="A path relative to the served folder (the workspace).",
    ),
]
Folder = Annotated[
    str,
    Field(min_length=1, max_length=NAME_CHARS, description="A folder relative to the workspace."),
]
Command = Annotated[
    str,
    Field(
        min_length=1,
        max_length=COMMAND_CHARS,
        description="The command line, run by /bin/sh in the workspace once approved.",
    ),
]
Search = Annotated[
    str,
    Field(
        min_length=1,
        max_length=TEXT_CHARS,
        description="Exact text to find; it must occur exactly once.",
    ),
]
Replace = Annotated[str, Field(max_length=TEXT_CHARS, description="Text that takes its place.")]
WaitSeconds = Annotated[
    float,
    Field(
        ge=0,
        le=MAX_WAIT_SECONDS,
        description="Seconds to wait at most; 0 answers at once with where the steps stand.",
    ),
]
StepIds = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=64)]] | None,
    Field(
        max_length=MAX_WAITED_STEPS,
        description=(
            "Ids of the steps to wait for, as the propose tools answered; "
            "none: every step proposed through this server."
        ),
    ),
]
QuestionIds = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=16)]] | None,
    Field(
        max_length=MAX_WAITED_STEPS,
        description=(
            "Ids of the questions to wait for (`q1`), as ask_person answered; none (and no "
            "step_ids): every question asked through this server."
        ),
    ),
]
Offset = Annotated[int, Field(ge=0, description="First line to show (0-based).")]
Lines = Annotated[
    int, Field(ge=1, le=MAX_READ_LINES, description="How many lines to show at most.")
]
