"""Tokens the agent sends per model request over a 40-turn conversation: before and after.

Before: old tool output pruned mechanically past 60,000 characters, the whole plan in the
instructions of every request. After (the defaults): older turns summarised by the model past
half of a 32k-token context, the plan sent as what changed since the previous request. Both
play the same 40 tool calls (reading a 10,000-row CSV in pieces, staging 12 cells, grepping)
through the real agent (pydantic-ai, the real tools and policy) on a scripted model, which
answers a summary request with about 2,000 characters (a real summary's size, at most 25
lines). Tokens are characters / 4, counted over everything a request carries: the messages,
the instructions and the tool definitions; summary requests are counted too.

    python benchmarks/bench_context.py [--turns 40] [--json]

Counts are deterministic: one run of each is the measurement (no timing is involved).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from planbook.agent.context import config_of  # noqa: E402
from planbook.agent.history import SUMMARY_MARK  # noqa: E402
from planbook.agent.memory import dump_messages  # noqa: E402
from planbook.agent.run import plan_task  # noqa: E402
from planbook.agents import Scripted  # noqa: E402
from planbook.documents.base import Cell  # noqa: E402
from planbook.documents.memory import MemoryNotebook  # noqa: E402
from planbook.sessions.session import Session  # noqa: E402
from planbook.workspace.files import Workspace  # noqa: E402

SUMMARY = ("The person wants the sales data cleaned and plotted; " * 40)[:2000]


def script(turns: int) -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    for i in range(turns - 1):
        if i % 3 == 2:
            calls.append(
                (
                    "insert_cell",
                    {
                        "source": f"step_{i} = df['amount'].rolling({i + 2}).mean()",
                        "reason": f"r{i}",
                    },
                )
            )
        elif i % 3 == 1:
            calls.append(("grep_files", {"regex": f"store_{i % 7},9", "include": "*.csv"}))
        else:
            calls.append(("read_file", {"path": "sales.csv", "offset": i * 150, "limit": 300}))
    calls.append(("present_plan", {"summary": "Clean and plot the sales."}))
    return calls


def request_tokens(messages: list[ModelMessage], info: AgentInfo) -> int:
    chars = len(json.dumps(dump_messages(messages), ensure_ascii=False))
    chars += len(info.instructions or "")
    chars += sum(
        len(json.dumps(t.parameters_json_schema)) + len(t.description or "")
        for t in info.function_tools
    )
    return chars // 4


async def measure(root: Path, turns: int, *, before: bool) -> list[tuple[int, bool]]:
    session = Session(
        MemoryNotebook(cells=[Cell(id="load", source="import pandas as pd")]), Workspace(root)
    )
    config = config_of(session)
    if before:
        config.context_strategy = "prune"
        config.plan_in_requests = "whole"
    inner = Scripted(script(turns)).to_model().function
    assert inner is not None
    sent: list[tuple[int, bool]] = []

    async def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = str(messages[-1].parts[0].content) if messages[-1].parts else ""  # type: ignore[union-attr]
        summary = last.startswith(SUMMARY_MARK)
        sent.append((request_tokens(messages, info), summary))
        if summary:
            return ModelResponse(parts=[TextPart(SUMMARY)])
        return await inner(messages, info)

    run = await plan_task(session, "clean and plot the sales", model=FunctionModel(model))
    if run.status != "finished":
        raise RuntimeError(f"the run did not finish: {run.error}")
    return sent


def describe(name: str, sent: list[tuple[int, bool]]) -> dict[str, Any]:
    agent = [t for t, s in sent if not s]
    return {
        "name": name,
        "requests": len(agent),
        "summary_requests": sum(1 for _, s in sent if s),
        "min": min(agent),
        "median": int(statistics.median(agent)),
        "max": max(agent),
        "last": agent[-1],
        "total": sum(t for t, _ in sent),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv if argv is not None else [])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        rows = ["date,store,amount"] + [
            f"2026-{1 + i % 12:02d}-{1 + i % 28:02d},store_{i % 7},{(i * 37) % 1000 / 10}"
            for i in range(10_000)
        ]
        (root / "sales.csv").write_text("\n".join(rows) + "\n")
        results = [
            describe(
                "before (prune, whole plan)", asyncio.run(measure(root, args.turns, before=True))
            ),
            describe(
                "after (summaries, plan changes)",
                asyncio.run(measure(root, args.turns, before=False)),
            ),
        ]
    if args.json:
        print(json.dumps(results, indent=1))
        return
    print(f"tokens (characters / 4) sent per request, {args.turns}-turn conversation")
    print(f"{'':48}{'requests':>9}{'min':>8}{'median':>8}{'max':>8}{'last':>8}{'total':>10}")
    for r in results:
        label = r["name"] + (
            f" +{r['summary_requests']} summaries" if r["summary_requests"] else ""
        )
        print(
            f"{label:48}{r['requests']:>9}{r['min']:>8}{r['median']:>8}{r['max']:>8}"
            f"{r['last']:>8}{r['total']:>10}"
        )
    b, a = results
    print(
        f"after / before: median {a['median'] / b['median']:.2f}, max {a['max'] / b['max']:.2f}, "
        f"total {a['total'] / b['total']:.2f}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
