"""One line of what the agent is doing: what a run emits, the panel and ``%plan`` show, and the
notebook keeps (as ``ActivityLine``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from planbook.model.base import PlanbookModel

ActivityType = Literal["status", "tool", "thinking", "text", "staged", "decision", "error"]


class Activity(PlanbookModel):
    """One line of what the agent is doing, for the panel and the %plan output."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: ActivityType
    message: str = Field(description="One line, ready to show.")
    data: dict[str, Any] = Field(default_factory=dict)
