"""Bounded text for read tools (the agent's, an MCP client's): a cell's outputs, a file's lines,
so a huge output, file or image never floods an answer."""

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


def numbered_lines(text: str, offset: int, limit: int, *, chars: int) -> str:
    """Lines ``offset`` (0-based) to ``offset + limit`` of ``text``, numbered from 1, at most
    ``chars`` characters, and where to read on when lines are left."""
    lines = text.splitlines()
    chosen = lines[max(offset, 0) : max(offset, 0) + max(limit, 1)]
    body = "\n".join(f"{offset + i + 1:>5}| {line}" for i, line in enumerate(chosen))
    rest = len(lines) - offset - len(chosen)
    tail = (
        f"\n[... {rest} more lines: read on with offset={offset + len(chosen)}]" if rest > 0 else ""
    )
    return clip(body, chars) + tail
