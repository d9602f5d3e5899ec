"""IPython magics: a thin surface that parses what was typed, calls the Session and shows the
result. Every planbook error becomes a one-line `UsageError` (no traceback)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from planbook.errors import PlanbookError, speak_as
from planbook.model.words import count
from planbook.present.checkpoint_names import checkpoint_name
from planbook.present.safe import visible
from planbook.sessions.session import Session
from planbook.surfaces import api, plan_verbs
from planbook.surfaces.api import NotebookSession
from planbook.surfaces.magics_agent import register as register_agent
from planbook.surfaces.say import say

T = TypeVar("T")


@contextmanager
def _as_usage_errors() -> Iterator[None]:
    try:
        yield
    except PlanbookError as exc:
        raise UsageError(visible(str(exc))) from None


def _session() -> NotebookSession:
    with _as_usage_errors():
        return api.session()


def show_report(session: Session, report: Any) -> None:
    say(report)
    if any(o.status != "done" for o in report.outcomes) or report.stopped:
        say(
            "see `%plan` for the plan as it stands",
            file=sys.stderr if not report.ok else sys.stdout,
        )


def _unquote(text: str) -> str:
    """IPython's argument parser keeps the quotes of `--reason "two words"`; drop them."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _running_cell(session: Session, shell: Any) -> str:
    """The id of the cell that runs this magic, which JupyterLab and Notebook 7 send with the
    execute request; elsewhere the one saved cell with the code being run, else the person is
    asked for an anchor."""
    parent: dict[str, Any] = {}
    kernel = getattr(shell, "kernel", None)
    with suppress(Exception):  # no kernel (plain IPython) or an old one: no parent to read
        parent = kernel.get_parent() if kernel is not None else {}
    cell_id = (parent or {}).get("metadata", {}).get("cellId")
    if not isinstance(cell_id, str) or not cell_id:
        cell_id = _cell_with_source(session, (parent or {}).get("content", {}).get("code"))
    if cell_id is None:
        raise UsageError(
            "this front end does not say which cell runs %%propose: give an anchor, e.g. "
            "`%%propose --after #3` (positions, ids and tags: `%plan cells`)"
        )
    if cell_id not in {c.id for c in session.cells()}:
        if session.page_advice.flagged():
            raise UsageError(
                f"this cell ({cell_id[:8]!r}) is not in the saved file yet: save the notebook "
                "(Ctrl+S) and try again, or give an anchor such as `--after #3`"
            )
        raise UsageError(
            f"this cell ({cell_id[:8]}) is not in {session.document.description} yet (save the "
            "notebook, or give an anchor such as `--after #3`; see `%plan cells`)"
        )
    return cell_id


def _cell_with_source(session: Session, code: object) -> str | None:
    """Front ends that send no cell id (nbconvert, papermill, nbclient) run a saved cell's
    source as it is: the one saved code cell with exactly this source is the running cell."""
    if not isinstance(code, str) or not code.strip():
        return None
    found = [c.id for c in session.cells() if c.cell_type == "code" and c.source == code]
    return found[0] if len(found) == 1 else None


@magics_class
class PlanbookMagics(Magics):
    @line_magic
    def plan(self, line: str) -> None:
        session = _session()
        with _as_usage_errors():
            plan_verbs.run(session, line)

    plan.__doc__ = plan_verbs.help_text()  # `%plan?`: generated from the verbs' table

    @cell_magic
    @magic_arguments()
    @argument("--after", metavar="CELL", help="insert the new cell after this cell")
    @argument("--before", metavar="CELL", help="insert the new cell before this cell")
    @argument("--replace", metavar="CELL", help="propose this as the new source of that cell")
    @argument("--run", action="store_true", help="also run the cell once approved")
    @argument("--markdown", action="store_true", help="the new cell is a markdown cell")
    @argument("--reason", default="", help="why this change is wanted")
    def propose(self, line: str, cell: str) -> None:
        """Stage this cell's body as a proposed change instead of running it.

        With no anchor the new cell goes right after the cell that runs %%propose (JupyterLab
        and Notebook 7 say which cell that is; elsewhere give an anchor). CELL is an id, a
        unique id prefix, a position (#5, as `%plan cells` shows it) or a cell tag.
        """
        args = parse_argstring(self.propose, line)
        anchors = [a for a in (args.after, args.before, args.replace) if a]
        if len(anchors) > 1:
            raise UsageError("give one of --after, --before or --replace")
        session = _session()
        body = cell.rstrip("\n")
        after = _unquote(args.after) if args.after else None
        before = _unquote(args.before) if args.before else None
        with _as_usage_errors():
            if args.replace:
                step = session.propose.edit_cell(
                    _unquote(args.replace), body, reason=_unquote(args.reason), run=args.run
                )
            else:
                if after is None and before is None:
                    after = _running_cell(session, self.shell)
                step = session.propose.insert_cell(
                    body,
                    after=after,
                    before=before,
                    reason=_unquote(args.reason),
                    run=args.run,
                    cell_type="markdown" if args.markdown else "code",
                )
        plan = session.current_plan()
        if step.status == "pending":  # its text is this cell's, which the person just wrote
            session.mark_shown("magics", [step], adding=True)
        number = plan.steps.index(step) + 1 if plan and step in plan.steps else "?"
        verb = "applied" if step.status == "done" else "staged"
        say(
            f"planbook: {verb} step {number} ({step.operation.kind}, {step.risk} risk)"
            + ("" if verb == "applied" else ": review with `%plan`, run with `%approve`")
        )
        advice = session.page_advice.with_first_staging()
        if advice:
            say(f"planbook: {advice}")

    @line_magic
    @magic_arguments()
    @argument(
        "steps",
        nargs="?",
        default=None,
        help="4: step 4 (its number in %%plan); 1,3-5: those steps; nothing: all pending",
    )
    @argument("--first", type=int, default=None, metavar="N", help="the first N pending steps")
    @argument("--dry-run", action="store_true", help="check what would run, change nothing")
    def approve(self, line: str) -> None:
        """Approve pending steps and run exactly those, in order, each behind a checkpoint.

        %approve            every pending step
        %approve 4          step 4 (the number %plan shows), the same in the API, CLI and panel
        %approve 1,3-5      steps 1, 3, 4 and 5
        %approve --first 2  the first two pending steps
        """
        args = parse_argstring(self.approve, line)
        session = _session()
        shown = session.last_shown("magics")
        if shown is None:  # approve what was seen, never what a file holds unseen
            print(
                "planbook: the plan was not shown in this kernel yet; here it is: run "
                "`%approve` again to approve what you see"
            )
            print(session.render_text(shown_to="magics"))
            return
        with _as_usage_errors():
            report = session.approve(
                args.steps, first=args.first, dry_run=args.dry_run, shown=shown
            )
        show_report(session, report)

    @line_magic
    @magic_arguments()
    @argument(
        "steps", nargs="?", default=None, help="4: step 4; 1,3-5: those steps; nothing: all pending"
    )
    @argument("--first", type=int, default=None, metavar="N", help="the first N pending steps")
    def reject(self, line: str) -> None:
        """Reject pending steps (all by default; 4 is step 4; --first N the first N)."""
        args = parse_argstring(self.reject, line)
        session = _session()
        with _as_usage_errors():
            rejected = session.reject(args.steps, first=args.first)
        say(f"planbook: rejected {count(rejected, 'step')}")

    @line_magic
    def checkpoints(self, line: str) -> None:
        """List the checkpoints written before each executed step."""
        say(_session().checkpoints_text())

    @line_magic
    @magic_arguments()
    @argument(
        "checkpoint",
        nargs="?",
        default=None,
        help="checkpoint id or number (see %%checkpoints); nothing: undo the last step",
    )
    @argument("--force", action="store_true", help="roll back even over changes made since")
    @argument(
        "--confirm",
        action="store_true",
        help="restore a checkpoint recorded elsewhere (a received notebook's)",
    )
    def rollback(self, line: str) -> None:
        """Undo the last executed step, or everything after a checkpoint (itself undoable).
        What it writes is printed first."""
        args = parse_argstring(self.rollback, line)
        session = _session()
        with _as_usage_errors():
            for shown in session.rollback_preview(args.checkpoint).lines():
                print(f"planbook: {shown}")
            record = session.rollback(args.checkpoint, force=args.force, confirm=args.confirm)
        name = checkpoint_name(record, session.store.state.plans, session.checkpoints())
        say(
            f"planbook: rolled back {count(record.undid, 'step')} ({name}); undo this with "
            f"`%rollback {record.id}`. Variables in the kernel are not rolled back."
        )

    @line_magic
    def mode(self, line: str) -> None:
        """Show or set the mode: plan, ask, auto-edit or act."""
        session = _session()
        if not line.strip():
            say(f"planbook: mode {session.mode}")
            return
        with _as_usage_errors():
            say(f"planbook: mode {session.set_mode(line.strip())}")


def register(ipython: Any) -> None:
    ipython.register_magics(PlanbookMagics)
    speak_as("magics")  # errors in this kernel name the magics as their fix
    register_agent(ipython)
    try:
        session = api.session()
    except PlanbookError as exc:
        say(f"planbook: {exc}", file=sys.stderr)
        return
    for note in [*session.recovered, *session.warnings]:
        say(f"planbook: {note}", file=sys.stderr)
    plan = session.current_plan()
    restored = ""
    if plan is not None and plan.is_open:
        pending = sum(1 for s in plan.steps if s.status == "pending")
        restored = f" · plan {plan.id} restored with {count(pending, 'pending step')}"
    say(f"planbook: mode {session.mode} · notebook: {session.document.description}{restored}")
