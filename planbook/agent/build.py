"""The pydantic-ai Agent: instructions, tools, and the capabilities that hold the rules.

The instructions are rebuilt for every model request from the session (mode, staged plan,
todos), so the plan survives any pruning of the history. Ask-mode approvals are resolved inline
(``HandleDeferredToolCalls``): the run waits for the person and then goes on.
"""

from __future__ import annotations

from typing import Any, cast

from pydantic_ai import Agent, AgentRetries, RunContext
from pydantic_ai.capabilities import HandleDeferredToolCalls, ProcessHistory
from pydantic_ai.tools import DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied

from planbook.agent.config import AgentConfig
from planbook.agent.context import AgentDeps, todos_of
from planbook.agent.guard import Guard, RunStopped
from planbook.agent.history import make_pruner
from planbook.agent.tools_flow import FLOW_TOOLS
from planbook.agent.tools_read import READ_TOOLS
from planbook.agent.tools_write import WRITE_TOOLS

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
"""


def describe_state(ctx: RunContext[AgentDeps]) -> str:
    """The mode, the staged plan and the todos, fresh for every request."""
    session = ctx.deps.session
    lines = [f"Current mode: {session.mode}."]
    plan = session.current_plan()
    if plan is not None and plan.is_open:
        from planbook.engine.planning import describe

        lines.append(f"Plan {plan.id} ({plan.state.replace('_', ' ')}), task: {plan.task or '-'}")
        if plan.current.feedback:
            lines.append(f"The person asked for this revision: {plan.current.feedback}")
        for n, step in enumerate(plan.steps, start=1):
            lines.append(
                f"  step {n} [{step.status}] id={step.id}: {describe(step)}"
                + (f" ({step.reason})" if step.reason else "")
            )
        if not plan.steps:
            lines.append("  (no steps staged yet)")
    todos = todos_of(session).views(plan)
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
        answer = await ctx.deps.decide(
            f"Apply this change? {summary}"
            + (f" — {args['reason']}" if args.get("reason") else ""),
            ["approve", "deny", "edit", "always allow"],
            kind="approval",
            data={"tool": call.tool_name, "args": args, **meta},
        )
        if answer.choice == "stop":
            raise RunStopped("stopped at your request")
        if answer.choice == "approve" or (answer.choice == "edit" and not answer.args):
            results.approvals[call.tool_call_id] = True
        elif answer.choice == "always allow":
            ctx.deps.rules.add(call.tool_name, meta.get("target") or "*", "allow", persist=True)
            ctx.deps.say(
                "status",
                f"rule added to planbook.toml: allow {call.tool_name} {meta.get('target') or '*'}",
            )
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


def build_agent(config: AgentConfig) -> Agent[AgentDeps, str]:
    """An agent with no model of its own: the run passes the resolved model."""
    tools: list[Any] = [*READ_TOOLS, *WRITE_TOOLS, *FLOW_TOOLS]
    agent: Agent[AgentDeps, str] = Agent(
        None,
        deps_type=AgentDeps,
        output_type=str,
        instructions=cast(Any, [INSTRUCTIONS, describe_state]),
        tools=tools,
        retries=AgentRetries(tools=config.max_tool_retries, output=1),
        capabilities=[
            Guard(),
            ProcessHistory(make_pruner(config.history_budget_chars)),
            HandleDeferredToolCalls(handler=resolve_approvals),
        ],
        name="planbook",
    )
    return agent
