"""Ready-made agents: ``planbook.agents.Scripted([...])`` plays a fixed list of tool calls."""

from __future__ import annotations

from planbook.agent.scripted import Call, Scripted

__all__ = ["Call", "Scripted"]
