"""The pydantic-ai Agent: instructions, tools, and the capabilities that hold the rules.

The instructions are rebuilt for every model request from the session: the mode, the todos, and
the plan, sent whole the first time and then only as what changed since the model's last request
(``read_plan`` gives it whole; a summary of older turns carries it whole too). Ask-mode approvals
are resolved inline (``HandleDeferredToolCalls``): the run waits for the person and then goes
on; "always allow" offers scopes (this file, this folder, a command prefix, this tool).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

from pydantic_ai import Agent, AgentRetries, RunContext
from pydantic_ai.capabilities import HandleDeferredToolCalls, ProcessHistory
from pydantic_ai.messages import ModelMessage
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.toolsets import DynamicToolset

from planbook.agent.config import AgentConfig
from planbook.agent.context import AgentDeps, todos_of
from planbook.agent.guard import Guard
from planbook.agent.history import (
    SUMMARY_HEAD,
    cut_for_summary,
    history_size,
    prune,
    replace_head,
    summarise,
)
from planbook.agent.mcp_toolsets import mcp_toolsets
from planbook.agent.plan_listing import plan_changes, plan_listing, seen_listing
from planbook.agent.tools_flow import FLOW_TOOLS
from planbook.agent.tools_read import READ_TOOLS
from planbook.agent.tools_write import WRITE_TOOLS
from planbook.engine.rules.file import Scope, scopes_for
from planbook.errors import PlanbookError, RunStopped

INSTRUCTIONS = """\
You are planbook's notebook agent, working inside the person's Jupyter kernel.
Explore freely with the read tools (list_cells, read_cell, list_files, glob_files, grep_files,
read_file, inspect_variable, run_read_only_shell). Every change goes through a write tool
(insert_cell, edit_cell, delete_cell, move_cell, run_cell, write_file, edit_file, delete_file,
shell), always with a one-sentence `reason`.
In plan mode a write tool only queues a step: the change does not exist until the person approves
it, so never retry a queued change and never wait for it; later steps may refer to a cell
inserted by an earlier step by the new cell id the tool returned. Keep a short todo list with
todo_write, linking todos to step ids. When the plan is complete, call present_plan(summary) once
and stop. Use ask_user when a choice belongs to the person. Suggest enter_plan / exit_plan only
when a different mode clearly fits better; the person decides. If a tool refuses, change course.
Tools named SERVER_tool come from the project's MCP servers: a read-only one answers at once;
any other call is queued as a step like a write (its description says which).
"""


Processor = Callable[[RunContext[AgentDeps], list[ModelMessage]], Awaitable[list[ModelMessage]]]


def make_processor(
    *,
    limit_chars: int,
    summarise_turns: bool,
    plan_text: Callable[[AgentDeps], str] | None = None,
) -> Processor:
    """Past ``limit_chars``, summarise (or, when off or failing, prune) the older turns."""

    async def keep_in_context(
        ctx: RunContext[AgentDeps], messages: list[ModelMessage]
    ) -> list[ModelMessage]:
        before = history_size(messages)
        if before <= limit_chars:
            return messages
        if summarise_turns:
            cut = cut_for_summary(messages, limit_chars // 3)
            if cut:
                try:
                    summary = await summarise(ctx.model, messages[:cut])
                except Exception as exc:
                    ctx.deps.say(
                        "error",
                        f"context: the model could not summarise ({type(exc).__name__}: "
                        f"{str(exc)[:120]}); pruning old tool output instead",
                    )
                else:
                    note = SUMMARY_HEAD + summary
                    if plan_text is not None:
                        # plan_text also marks the plan as seen: later requests send changes.
                        note += "\n\nThe plan as it stands now:\n" + plan_text(ctx.deps)
                    out = replace_head(messages, cut, note)
                    ctx.deps.say(
                        "status",
                        f"context: summarised {cut} older messages "
                        f"({before:,} -> {history_size(out):,} chars)",
                    )
                    return out
        pruned = prune(messages, limit_chars)
        if pruned is not messages:
            ctx.deps.say(
                "status",
                f"context: pruned old tool outputs ({before:,} -> {history_size(pruned):,} chars)",
            )
        return pruned

    return keep_in_context


def describe_state(ctx: RunContext[AgentDeps]) -> str:
    """The mode, the plan (whole, or what changed since the last request), and the todos."""
    deps = ctx.deps
    session = deps.session
    lines = [f"Current mode: {session.mode}."]
    if deps.config.plan_in_requests == "whole":
        lines.append(plan_listing(session))
    else:
        lines.append(plan_changes(deps))
    todos = todos_of(session).views(session.current_plan())
    if todos:
        lines.append("Todos: " + "; ".join(f"[{t.status}] {t.content}" for t in todos))
    return "\n".join(lines)


async def resolve_approvals(
    ctx: RunContext[AgentDeps], requests: DeferredToolRequests
) -> DeferredToolResults:
    """Ask the person about each change that needs approval; the run waits for the answers."""
    results = DeferredToolResults()
    for call in requests.approvals:
        meta: dict[str, Any] = requests.metadata.get(call.tool_call_id, {}) or {}
        args = call.args_as_dict()
        summary = meta.get("summary", call.tool_name)
        scopes = offered_scopes(ctx.deps, call.tool_name, meta.get("target"))
        answer = await ctx.deps.decide(
            f"Apply this change? {summary}"
            + (f" — {args['reason']}" if args.get("reason") else ""),
            ["approve", "deny", "edit", *(s.choice for s in scopes)],
            kind="approval",
            data={
                "tool": call.tool_name,
                "args": args,
                "scopes": [s.model_dump() for s in scopes],
                **meta,
            },
            call_id=call.tool_call_id,
        )
        if answer.choice == "stop":
            raise RunStopped("stopped at your request")
        # "always allow" alone (older panels, scripts) means the narrowest scope offered.
        scope = next(
            (s for s in scopes if answer.choice in (s.choice, "always allow")),
            None,
        )
        if answer.choice == "approve" or (answer.choice == "edit" and not answer.args):
            results.approvals[call.tool_call_id] = True
        elif scope is not None:
            remember(ctx.deps, scope, summary)
            results.approvals[call.tool_call_id] = True
        elif answer.choice == "edit":
            results.approvals[call.tool_call_id] = ToolApproved(
                override_args={**args, **(answer.args or {})}
            )
        else:
            why = answer.text or "no reason given"
            results.approvals[call.tool_call_id] = ToolDenied(
                f"The person denied this change: {why}. Do not retry it as it was; adjust or ask."
            )
    return results


def offered_scopes(deps: AgentDeps, tool: str, target: str | None) -> list[Scope]:
    session = deps.session
    protected: tuple[str, ...] = ()
    if session.notebook_path is not None:
        try:
            protected = (session.notebook_path.relative_to(session.workspace.root).as_posix(),)
        except ValueError:
            protected = ()
    return scopes_for(tool, target, protected)


def remember(deps: AgentDeps, scope: Scope, summary: str) -> None:
    """Write the person's "always allow <scope>" to planbook.toml, with a comment saying why."""
    comment = f"{scope.choice}: chosen by you when asked about {summary[:80]!r}"
    try:
        deps.rules.add(scope.tool, scope.pattern, "allow", persist=True, comment=comment)
    except PlanbookError as exc:
        deps.say("error", f"the rule was not saved ({exc}); the change itself is approved")
        return
    deps.say("status", f"rule added to planbook.toml: allow {scope.tool} {scope.pattern}")


#: Every tool the agent has, for telling an unknown tool call apart.
TOOL_NAMES = frozenset(t.__name__ for t in (*READ_TOOLS, *WRITE_TOOLS, *FLOW_TOOLS))


def build_agent(config: AgentConfig) -> Agent[AgentDeps, str]:
    """An agent with no model of its own: the run passes the resolved model."""
    tools: list[Any] = [*READ_TOOLS, *WRITE_TOOLS, *FLOW_TOOLS]
    agent: Agent[AgentDeps, str] = Agent(
        None,
        deps_type=AgentDeps,
        output_type=str,
        instructions=cast(Any, [INSTRUCTIONS, describe_state]),
        tools=tools,
        # planbook.toml's MCP servers, read once a run (a server starts with the run)
        toolsets=[DynamicToolset(mcp_toolsets, per_run_step=False)],
        retries=AgentRetries(tools=config.max_tool_retries, output=1),
        capabilities=[
            Guard(),
            ProcessHistory(
                make_processor(
                    limit_chars=config.context_limit_chars,
                    summarise_turns=config.context_strategy == "summarise",
                    plan_text=seen_listing if config.plan_in_requests == "changes" else None,
                )
            ),
            HandleDeferredToolCalls(handler=resolve_approvals),
        ],
        name="planbook",
    )
    return agent
