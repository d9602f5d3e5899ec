"""IPython magics: a thin surface that parses what was typed, calls the Session and shows the
result. Every planbook error becomes a one-line `UsageError` (no traceback)."""

from __future__ import annotations

import sys
from typing import Any, TypeVar

from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from planbook.model.words import count
from planbook.present.checkpoint_names import checkpoint_name
from planbook.sessions.session import Session
from planbook.surfaces import plan_verbs
from planbook.surfaces.magic_common import announce_at_first_use, as_usage_errors, kernel_session
from planbook.surfaces.magics_agent import register as register_agent
from planbook.surfaces.magics_propose import ProposeMagics
from planbook.surfaces.say import say

T = TypeVar("T")


def show_report(session: Session, report: Any) -> None:
    say(report)
    if any(o.status != "done" for o in report.outcomes) or report.stopped:
        say(
            "see `%plan` for the plan as it stands",
            file=sys.stderr if not report.ok else sys.stdout,
        )


@magics_class
class PlanbookMagics(Magics):
    @line_magic
    def plan(self, line: str) -> None:
        session = kernel_session()
        with as_usage_errors():
            plan_verbs.run(session, line)

    plan.__doc__ = plan_verbs.help_text()  # `%plan?`: generated from the verbs' table

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
        session = kernel_session()
        shown = session.last_shown("magics")
        if shown is None:  # approve what was seen, never what a file holds unseen
            say(
                "planbook: the plan was not shown in this kernel yet; here it is: run "
                "`%approve` again to approve what you see"
            )
            say(session.render_text(shown_to="magics"))
            return
        with as_usage_errors():
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
        session = kernel_session()
        with as_usage_errors():
            rejected = session.reject(args.steps, first=args.first)
        say(f"planbook: rejected {count(rejected, 'step')}")

    @line_magic
    def checkpoints(self, line: str) -> None:
        """List the checkpoints written before each executed step."""
        say(kernel_session().checkpoints_text())

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
        session = kernel_session()
        with as_usage_errors():
            writes = [f"planbook: {w}" for w in session.rollback_preview(args.checkpoint).lines()]
            record = session.rollback(args.checkpoint, force=args.force, confirm=args.confirm)
        name = checkpoint_name(record, session.store.state.plans, session.checkpoints())
        # one print: what it wrote, then what it did (one output, however fast the kernel)
        say(
            "\n".join(
                [
                    *writes,
                    f"planbook: rolled back {count(record.undid, 'step')} ({name}); undo this "
                    f"with `%rollback {record.id}`. Variables in the kernel are not rolled back.",
                ]
            )
        )

    @line_magic
    def mode(self, line: str) -> None:
        """Show or set the mode: plan, ask, auto-edit or act."""
        session = kernel_session()
        if not line.strip():
            say(f"planbook: mode {session.mode}")
            return
        with as_usage_errors():
            say(f"planbook: mode {session.set_mode(line.strip())}")


def register(ipython: Any) -> None:
    """The real magics, in place of the stand-ins ``%load_ext planbook`` registered
    (extension.py); the first magic to run says what the kernel's session opened on."""
    ipython.register_magics(PlanbookMagics)
    ipython.register_magics(ProposeMagics)
    register_agent(ipython)
    announce_at_first_use()
