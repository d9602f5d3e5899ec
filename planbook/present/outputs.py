"""A cell's outputs as bounded text: what a read tool (the agent's, an MCP client's) shows of
them, so a huge output or an image never floods an answer."""

from __future__ import annotations

from typing import Any

#: Characters of one output's text shown; the rest is counted, not shown.
OUTPUT_LIMIT = 1500


def clip(text: str, limit: int) -> str:
    """``text`` cut at ``limit`` characters, saying how many more there were."""
    return (
        text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit:,} more chars]"
    )


def joined(value: Any) -> str:
    """An nbformat text field (a string or a list of lines) as one string."""
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return "" if value is None else str(value)


def summarise_output(output: dict[str, Any]) -> str:
    """One nbformat output dict as one bounded line (or a few): stream text, the error's name
    and value, a result's plain text with the sizes of its other formats."""
    kind = output.get("output_type")
    if kind == "stream":
        return f"- {output.get('name', 'stream')}: " + clip(
            joined(output.get("text")), OUTPUT_LIMIT
        )
    if kind == "error":
        return f"- error {output.get('ename')}: {clip(str(output.get('evalue')), 500)}"
    if kind in ("execute_result", "display_data"):
        data = output.get("data") or {}
        others = [m for m in data if m != "text/plain"]
        text = clip(joined(data.get("text/plain")), OUTPUT_LIMIT)
        sizes = ", ".join(f"{m} ({len(joined(data[m])):,} chars)" for m in others)
        return f"- {kind}: {text}" + (f" [also: {sizes}]" if sizes else "")
    return f"- {kind}"
