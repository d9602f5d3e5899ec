"""IPython magics: a thin surface that parses what was typed, calls the Session and shows the
result. Every planbook error becomes a one-line `UsageError` (no traceback)."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

import planbook
from planbook.errors import PlanbookError
from planbook.session import Session

T = TypeVar("T")
PLAN_SUBCOMMANDS = (
    "show",
    "text",
    "on",
    "off",
    "revise",
    "skip",
    "unskip",
    "move",
    "history",
    "diff",
    "cells",
    "panel",
    "stop",
    "gc",
)


@contextmanager
def _as_usage_errors() -> Iterator[None]:
    try:
        yield
    except PlanbookError as exc:
        raise UsageError(str(exc)) from None


def _session() -> Session:
    with _as_usage_errors():
        return planbook.session()


def show_plan(session: Session) -> None:
    """The review panel where widgets render; its bundle carries the plan as markdown and
    text for everywhere else."""
    display(session.review())


def show_report(session: Session, report: Any) -> None:
    print(report)
    if any(o.status != "done" for o in report.outcomes) or report.stopped:
        print(
            "see `%plan` for the plan as it stands",
            file=sys.stderr if not report.ok else sys.stdout,
        )


def _unquote(text: str) -> str:
    """IPython's argument parser keeps the quotes of `--reason "two words"`; drop them."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _int(token: str, what: str) -> int:
    try:
        return int(token)
    except ValueError:
        raise UsageError(f"`{token}` is not a {what}; see `%plan?`") from None


@magics_class
class PlanbookMagics(Magics):
    @line_magic
    def plan(self, line: str) -> None:
        """Show or change the plan.

        %plan | %plan show        the plan, every step with its reason, risk and diff
        %plan text                the same as plain text
        %plan on | %plan off      plan mode on (changes are staged) / off (act mode)
        %plan revise "feedback"   start a new revision (the old one is kept)
        %plan skip N | unskip N   leave step N out of "approve all" / put it back
        %plan move N before M     reorder steps
        %plan history             the revisions; %plan diff A B: what changed between two
        %plan cells               the notebook's cells with their ids
        %plan "task"              ask the configured agent to plan a task
        %plan stop                end the agent's run (the plan staged so far is kept)
        %plan gc [K]              keep the newest K checkpoints (default: keep_checkpoints)
        """
        try:
            args = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"cannot parse `{line}`: {exc}") from None
        session = _session()
        with _as_usage_errors():
            self._plan(session, args, line)

    def _plan(self, session: Session, args: list[str], line: str) -> None:
        if not args or args[0] == "show":
            show_plan(session)
            return
        cmd, rest = args[0], args[1:]
        if cmd == "text":
            print(session.render_text())
        elif cmd in ("on", "off"):
            mode = session.set_mode("plan" if cmd == "on" else "act")
            print(
                f"planbook: mode {mode}"
                + (
                    " (changes are staged for your approval)"
                    if mode == "plan"
                    else " (changes apply at once, each with a checkpoint)"
                )
            )
        elif cmd == "revise":
            if not rest:
                raise UsageError('say what should change: `%plan revise "use a bar chart"`')
            feedback = " ".join(rest)
            revise = session.extras.get("revise_with_agent")
            if callable(revise):
                revise(feedback)
            else:
                revision = session.revise(feedback)
                print(f"revision {revision.number} started from {revision.parent}: {feedback}")
        elif cmd in ("skip", "unskip"):
            if len(rest) != 1:
                raise UsageError(f"usage: `%plan {cmd} N`")
            number = _int(rest[0], "step number")
            step = session.skip(number) if cmd == "skip" else session.unskip(number)
            print(f"step {number} is {step.status}")
        elif cmd == "move":
            if len(rest) != 3 or rest[1] not in ("before", "after"):
                raise UsageError("usage: `%plan move N before M` (or `after M`)")
            number, other = _int(rest[0], "step number"), _int(rest[2], "step number")
            session.move(number, before=other if rest[1] == "before" else other + 1)
            show_plan(session)
        elif cmd == "history":
            print(session.history())
        elif cmd == "diff":
            if len(rest) != 2:
                raise UsageError("usage: `%plan diff A B` with two revision numbers")
            print(session.diff_revisions(_int(rest[0], "revision"), _int(rest[1], "revision")))
        elif cmd == "cells":
            for n, cell in enumerate(session.cells(), start=1):
                first = next((x for x in cell.source.splitlines() if x.strip()), "")
                print(f"{n:>3}. {cell.id}  [{cell.cell_type}]  {first[:70]}")
        elif cmd == "stop":
            from planbook.agent.magics_agent import stop_plan

            print(stop_plan(session))
        elif cmd == "gc":
            keep = _int(rest[0], "number of checkpoints to keep") if rest else None
            print(f"planbook: {session.gc(keep_checkpoints=keep)}")
        elif cmd == "panel":
            display(session.review())
        elif len(args) == 1 and not line.strip().startswith(("'", '"')):
            # one bare word is far more likely a mistyped command than a task for the agent
            raise UsageError(
                f"`{cmd}` is not a %plan command ({', '.join(PLAN_SUBCOMMANDS)}); "
                f'to ask the agent, quote the task: %plan "{cmd}"'
            )
        else:
            self._agent_plan(session, line.strip().strip("\"'"))

    def _agent_plan(self, session: Session, task: str) -> None:
        try:
            from planbook.agent.magics_agent import start_plan  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise UsageError(
                f"`{task.split()[0] if task else ''}` is not a %plan command, and the agent is not "
                f"available; commands: {', '.join(PLAN_SUBCOMMANDS)}"
            ) from None
        start_plan(session, task)

    @cell_magic
    @magic_arguments()
    @argument("--after", metavar="ID", help="insert the cell after the cell with this id")
    @argument("--before", metavar="ID", help="insert the cell before the cell with this id")
    @argument("--replace", metavar="ID", help="propose this as the new source of that cell")
    @argument("--run", action="store_true", help="also run the cell once approved")
    @argument("--markdown", action="store_true", help="the new cell is a markdown cell")
    @argument("--reason", default="", help="why this change is wanted")
    def propose(self, line: str, cell: str) -> None:
        """Stage this cell's body as a proposed change instead of running it."""
        args = parse_argstring(self.propose, line)
        anchors = [a for a in (args.after, args.before, args.replace) if a]
        if len(anchors) > 1:
            raise UsageError("give one of --after, --before or --replace")
        session = _session()
        body = cell.rstrip("\n")
        with _as_usage_errors():
            if args.replace:
                step = session.propose.edit_cell(
                    args.replace, body, reason=_unquote(args.reason), run=args.run
                )
            else:
                step = session.propose.insert_cell(
                    body,
                    after=args.after,
                    before=args.before,
                    reason=_unquote(args.reason),
                    run=args.run,
                    cell_type="markdown" if args.markdown else "code",
                )
        plan = session.current_plan()
        number = plan.steps.index(step) + 1 if plan and step in plan.steps else "?"
        verb = "applied" if step.status == "done" else "staged"
        print(
            f"planbook: {verb} step {number} ({step.operation.kind}, {step.risk} risk)"
            + ("" if verb == "applied" else ": review with `%plan`, run with `%approve`")
        )

    @line_magic
    @magic_arguments()
    @argument(
        "steps",
        nargs="?",
        default=None,
        help="N approves the first N pending steps; 1,3-5 those steps; nothing: all",
    )
    @argument("--dry-run", action="store_true", help="check what would run, change nothing")
    def approve(self, line: str) -> None:
        """Approve pending steps and run exactly those, in order, each behind a checkpoint."""
        args = parse_argstring(self.approve, line)
        session = _session()
        with _as_usage_errors():
            report = session.approve(args.steps, dry_run=args.dry_run)
        show_report(session, report)

    @line_magic
    @magic_arguments()
    @argument("steps", nargs="?", default=None, help="step numbers (1,3-5); nothing: all pending")
    def reject(self, line: str) -> None:
        """Reject pending steps (all by default)."""
        args = parse_argstring(self.reject, line)
        session = _session()
        with _as_usage_errors():
            rejected = session.reject(args.steps)
        print(f"planbook: rejected {len(rejected)} step(s)")

    @line_magic
    def checkpoints(self, line: str) -> None:
        """List the checkpoints written before each executed step."""
        print(_session().checkpoints_text())

    @line_magic
    @magic_arguments()
    @argument(
        "checkpoint",
        nargs="?",
        default=None,
        help="checkpoint id or number (see %%checkpoints); nothing: undo the last step",
    )
    @argument("--force", action="store_true", help="roll back even over changes made since")
    def rollback(self, line: str) -> None:
        """Undo the last executed step, or everything after a checkpoint (itself undoable)."""
        args = parse_argstring(self.rollback, line)
        session = _session()
        with _as_usage_errors():
            record = session.rollback(args.checkpoint, force=args.force)
        print(
            f"planbook: rolled back {len(record.undid)} step(s) ({record.label}); undo this with "
            f"`%rollback {record.id}`. Variables in the kernel are not rolled back."
        )

    @line_magic
    def mode(self, line: str) -> None:
        """Show or set the mode: plan, ask, auto-edit or act."""
        session = _session()
        if not line.strip():
            print(f"planbook: mode {session.mode}")
            return
        with _as_usage_errors():
            print(f"planbook: mode {session.set_mode(line.strip())}")


def register(ipython: Any) -> None:
    from planbook.agent.magics_agent import register as register_agent

    ipython.register_magics(PlanbookMagics)
    register_agent(ipython)
    try:
        session = planbook.session()
    except PlanbookError as exc:
        print(f"planbook: {exc}", file=sys.stderr)
        return
    for note in [*session.recovered, *session.warnings]:
        print(f"planbook: {note}", file=sys.stderr)
    plan = session.current_plan()
    restored = ""
    if plan is not None and plan.is_open:
        pending = sum(1 for s in plan.steps if s.status == "pending")
        restored = f" · plan {plan.id} restored with {pending} pending step(s)"
    print(f"planbook: mode {session.mode} · notebook: {session.document.description}{restored}")
