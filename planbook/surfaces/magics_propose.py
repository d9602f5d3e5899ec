"""``%%propose`` and ``%propose``: every change a magic user can stage, with the words of the
magic. With a body (``%%propose``): a new cell (after the running cell, or ``--after`` /
``--before`` CELL), a new source for a cell (``--replace CELL``) or a file's new text (``--write
PATH``). On one line (``%propose``): ``--delete CELL``, ``--move CELL`` (``--after X`` /
``--before X``, or neither: to the top) and ``--run-cell CELL``. Each takes ``--reason``."""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from planbook.model.plan import Step
from planbook.sessions.session import Session
from planbook.surfaces.api import NotebookSession
from planbook.surfaces.magic_common import as_usage_errors, kernel_session, unquote
from planbook.surfaces.say import say

#: The options that stage something other than a new cell, and whether they take the body.
WITH_BODY = ("replace", "write")
ON_ONE_LINE = ("delete", "move", "run_cell")


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


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


def _check(args: Any, body: str | None) -> str | None:
    """The one option naming what to stage (None: a new cell); a combination that makes no
    sense is one line naming it."""
    chosen = [name for name in (*WITH_BODY, *ON_ONE_LINE) if getattr(args, name)]
    if len(chosen) > 1:
        raise UsageError(f"give one of {', '.join(_option(n) for n in chosen)}, not both")
    what = chosen[0] if chosen else None
    if args.after and args.before:
        raise UsageError("give one of --after or --before, not both")
    if what in WITH_BODY and (args.after or args.before):
        raise UsageError(f"{_option(what)} takes no --after or --before")
    if what in ("delete", "run_cell") and (args.after or args.before):
        raise UsageError(f"{_option(what)} takes no --after or --before (that is --move)")
    if what in ON_ONE_LINE and (body or "").strip():
        raise UsageError(
            f"{_option(what)} takes no cell body: write it on one line, "
            f"`%propose {_option(what)} CELL`"
        )
    if what in ON_ONE_LINE and (args.run or args.markdown):
        extra = "--run" if args.run else "--markdown"
        raise UsageError(f"{_option(what)} takes no {extra}")
    if what not in ON_ONE_LINE and body is None:
        option = f" {_option(what)}" if what else ""
        raise UsageError(
            f"`%propose{option}` needs the text below it: use `%%propose{option}` as the first "
            "line of a cell (on one line: --delete, --move or --run-cell)"
        )
    if what == "write" and (args.run or args.markdown):
        raise UsageError(f"--write takes no {'--run' if args.run else '--markdown'}")
    if what == "replace" and args.markdown:
        raise UsageError("--replace keeps the cell's type: drop --markdown")
    return what


def _stage(session: NotebookSession, shell: Any, args: Any, what: str | None, body: str) -> Step:
    reason = unquote(args.reason)
    after = unquote(args.after) if args.after else None
    before = unquote(args.before) if args.before else None
    propose = session.propose
    if what == "replace":
        return propose.edit_cell(unquote(args.replace), body, reason=reason, run=args.run)
    if what == "write":
        text = body if body.endswith("\n") or not body else body + "\n"
        return propose.write_file(unquote(args.write), text, reason=reason)
    if what == "delete":
        return propose.delete_cell(unquote(args.delete), reason=reason)
    if what == "move":
        return propose.move_cell(unquote(args.move), after=after, before=before, reason=reason)
    if what == "run_cell":
        return propose.run_cell(unquote(args.run_cell), reason=reason)
    if after is None and before is None:
        after = _running_cell(session, shell)
    return propose.insert_cell(
        body,
        after=after,
        before=before,
        reason=reason,
        run=args.run,
        cell_type="markdown" if args.markdown else "code",
    )


@magics_class
class ProposeMagics(Magics):
    @line_cell_magic
    @magic_arguments()
    @argument("--after", metavar="CELL", help="the new cell (or the moved one) goes after CELL")
    @argument("--before", metavar="CELL", help="the new cell (or the moved one) goes before CELL")
    @argument("--replace", metavar="CELL", help="the body is the new source of CELL")
    @argument("--write", metavar="PATH", help="the body is the new text of the file PATH")
    @argument("--delete", metavar="CELL", help="delete CELL (one line, no body)")
    @argument("--move", metavar="CELL", help="move CELL after or before another (neither: top)")
    @argument("--run-cell", metavar="CELL", help="run CELL's code once approved (one line)")
    @argument("--run", action="store_true", help="also run the new or edited cell once approved")
    @argument("--markdown", action="store_true", help="the new cell is a markdown cell")
    @argument("--reason", default="", metavar="TEXT", help="why this change is wanted")
    def propose(self, line: str, cell: str | None = None) -> None:
        """Stage a change instead of making it: %%propose with the text below it, %propose on
        one line for --delete, --move and --run-cell.

        %%propose [--after CELL | --before CELL] [--run] [--markdown]   a new cell
        %%propose --replace CELL [--run]                               a cell's new source
        %%propose --write PATH                                         a file's new text
        %propose --delete CELL
        %propose --move CELL [--after X | --before X]                  (neither: to the top)
        %propose --run-cell CELL

        With no anchor a new cell goes right after the cell that runs %%propose (JupyterLab
        and Notebook 7 say which cell that is; elsewhere give an anchor). CELL is an id, a
        unique id prefix, a position (#5, as `%plan cells` shows it) or a cell tag. Each
        takes --reason "why".
        """
        args = parse_argstring(self.propose, line)
        what = _check(args, cell)
        session = kernel_session()
        plan = session.current_plan()
        known = {s.id for s in plan.steps} if plan is not None else set()
        with as_usage_errors():
            step = _stage(session, self.shell, args, what, (cell or "").rstrip("\n"))
        if step.id in known:
            return  # already staged: the session said so in one line
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
