"""The ``planbook`` subcommands that work on a notebook file: show, approve, reject, rollback,
takeover, preview, log, gc, strip and answer. Each is one ``cmd_*`` function taking the parsed
arguments and returning its exit code; what goes wrong is raised as a ``CliError`` (one line
and its exit code).

They read the file (``loading``), call a Session and print what happened; ``approve`` hands
the run to a real kernel (``kernel``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from planbook.errors import CliError, MetadataError
from planbook.model.checkpoint import Checkpoint
from planbook.model.words import count, plural
from planbook.present.checkpoint_names import checkpoint_name
from planbook.present.questions import question_line, questions_text
from planbook.present.safe import visible
from planbook.present.text import color_line, preview_lines
from planbook.sessions.open_file import strip_file, strip_metadata
from planbook.sessions.session import Session
from planbook.surfaces.cli.audit import audit_line, audit_rows
from planbook.surfaces.cli.exit_codes import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_MISSING,
    EXIT_NOT_NOTEBOOK,
    EXIT_NOTHING,
    EXIT_OK,
    EXIT_USAGE,
    cannot_write,
    unwritable,
)
from planbook.surfaces.cli.kernel import run_in_kernel, selection
from planbook.surfaces.cli.loading import (
    Loaded,
    file_session,
    load,
    planbook_errors,
    read_session,
)
from planbook.surfaces.cli.paths import shown
from planbook.surfaces.say import say

#: What the executor reports when a KeyboardInterrupt ended a run between steps.
_CLEAN_STOP = "interrupted: the run ended cleanly between steps"


def cmd_show(args: argparse.Namespace) -> int:
    loaded = load(args.notebook, need_plan=False)
    if not loaded.state.plans and not loaded.state.questions:
        load(args.notebook)  # says there is no plan, as every command does
    color = args.color if args.color is not None else sys.stdout.isatty()
    session = read_session(loaded)
    if loaded.state.plans:
        # render_text makes stored text visible itself; only its own colours reach the terminal.
        print(session.render_text(color=color), end="")
    if loaded.state.checkpoints:  # numbered as `planbook rollback NB N` takes them
        say("\ncheckpoints:\n" + session.checkpoints_text())
    waiting = session.person_questions(waiting_only=True)
    if waiting:
        how = f"`planbook answer {shown(loaded.path)} QID ANSWER`"
        say(f"\nquestions for you:\n{questions_text(waiting, session.answered_here, how)}")
    elif not loaded.state.plans:
        say(f"{shown(loaded.path)}: no plan yet, and every question asked over MCP is answered")
    return EXIT_OK


def cmd_answer(args: argparse.Namespace) -> int:
    loaded = load(args.notebook, need_plan=False)
    text = " ".join(args.answer)
    session = file_session(loaded)
    answered = planbook_errors(loaded, lambda: session.answer_question(args.question, text))
    given = visible(answered.answer or "")
    say(f"answered {question_line(answered, session.answered_here)}: {given}")
    return EXIT_OK


def cmd_reject(args: argparse.Namespace) -> int:
    loaded = load(args.notebook)
    plan = next((p for p in reversed(loaded.state.plans) if p.is_open), loaded.state.plans[-1])
    if not any(s.status in ("pending", "skipped") for s in plan.steps):
        raise CliError(EXIT_NOTHING, f"{args.notebook}: nothing to reject: no step is pending")
    session = file_session(loaded)
    spec = args.steps.strip() if args.steps else None
    rejected = planbook_errors(loaded, lambda: session.reject(spec))
    current = session.current_plan()
    numbers = {s.id: n for n, s in enumerate(current.steps if current else [], start=1)}
    say(f"rejected {count(rejected, 'step')}: {', '.join(str(numbers[s.id]) for s in rejected)}")
    return EXIT_OK


def cmd_rollback(args: argparse.Namespace) -> int:
    loaded = load(args.notebook, need_plan=False)
    if not loaded.state.checkpoints:
        ran = any(s.checkpoint for p in loaded.state.plans for s in p.steps)
        why = (
            "no checkpoint is left to roll back to (gc removed them)"
            if ran
            else "no step has run yet"
        )
        raise CliError(EXIT_NOTHING, f"{args.notebook}: nothing to roll back: {why}")
    session = file_session(loaded)
    for line in planbook_errors(loaded, lambda: session.rollback_preview(args.checkpoint)).lines():
        say(line)
    record = planbook_errors(
        loaded,
        lambda: session.rollback(args.checkpoint, force=args.force, confirm=args.confirm),
    )
    say(
        f"rolled back {count(record.undid, 'step')} ({_checkpoint_name(session, record)}); "
        "undo this with "
        f"`planbook rollback {shown(loaded.path)} {record.id}`"
    )
    return EXIT_OK


def cmd_takeover(args: argparse.Namespace) -> int:
    loaded = load(args.notebook)
    session = file_session(loaded)
    asked = planbook_errors(loaded, lambda: session.take_over(args.step))
    if not args.yes:
        if not sys.stdin.isatty():
            raise CliError(
                EXIT_USAGE,
                f"{asked.line}; confirm with `planbook takeover {shown(loaded.path)} "
                f"{args.step} --yes`",
            )
        answer = input(visible(f"{asked.line}.\nTake it over? [y/N] "))
        if answer.strip().lower() not in ("y", "yes"):
            say("not taken over; nothing changed")
            return EXIT_NOTHING
    taken = planbook_errors(loaded, lambda: session.take_over(args.step, confirm=True))
    say(taken.line)
    return EXIT_OK


def cmd_preview(args: argparse.Namespace) -> int:
    loaded = load(args.notebook)
    session = file_session(loaded)
    preview = planbook_errors(loaded, lambda: session.preview(args.step))
    color = args.color if args.color is not None else sys.stdout.isatty()
    lines = preview_lines(preview)
    # preview_lines shows control characters as escapes; only these colours reach the terminal.
    print("\n".join(color_line(line) if color else line for line in lines))
    return EXIT_FAILED if preview.problem else EXIT_OK


def _checkpoint_name(session: Session, record: Checkpoint) -> str:
    return checkpoint_name(record, session.store.state.plans, session.checkpoints())


def cmd_log(args: argparse.Namespace) -> int:
    loaded = load(args.notebook, need_plan=False)
    rows = audit_rows(loaded.state)
    if args.json:
        say(json.dumps(rows, indent=2))
    elif not rows:
        say(f"{args.notebook}: no planbook history yet")
    else:
        for row in rows:
            say(audit_line(row))
    return EXIT_OK


def step_spec(steps: str | None, first: int | None) -> str | int | None:
    """``--steps 3`` is step 3 (as ``%approve 3``); ``--first 3`` the first three (an int)."""
    if first is not None and steps is not None:
        raise CliError(
            EXIT_USAGE,
            f"--steps {steps} and --first {first} both choose steps: give one of them "
            "(--steps names steps by number, --first counts pending steps from the top)",
        )
    if first is not None:
        if first < 1:
            raise CliError(EXIT_USAGE, f"--first {first}: give a count of 1 or more")
        return first
    if steps is None:
        return None
    spec = steps.strip()
    if re.fullmatch(r"\d+", spec):
        spec = f"{spec}-{spec}"
    return spec


def cmd_approve(args: argparse.Namespace) -> int:
    loaded = load(args.notebook)
    spec = step_spec(args.steps, args.first)
    preview = read_session(loaded)
    _pending(loaded, preview)
    # Validate the selection and check drift before paying for a kernel.
    dry = planbook_errors(loaded, lambda: preview.approve(**selection(spec), dry_run=True))
    if args.dry_run:
        for o in dry.outcomes:
            say(f"step {o.number} ({o.kind}): {o.status}" + (f": {o.message}" if o.message else ""))
        say("dry run: nothing was applied")
        return EXIT_FAILED if any(o.status != "would run" for o in dry.outcomes) else EXIT_OK
    # What is approved is what this prints: the kernel refuses any step changed since.
    say(preview.render_text(shown_to="cli"), end="")
    report = run_in_kernel(
        loaded,
        spec,
        rerun=not args.no_rerun,
        timeout=args.timeout,
        by=args.by,
        quiet=args.quiet,
        shown=preview.last_shown("cli") or {},
    )
    return print_report(loaded, report)


def _pending(loaded: Loaded, session: Session) -> None:
    plan = session.current_plan()
    if plan is None or not any(s.status == "pending" for s in plan.steps):
        raise CliError(
            EXIT_NOTHING,
            f"{shown(loaded.path)}: no step is pending; "
            f"see the plan with `planbook show {shown(loaded.path)}`",
        )


def print_report(loaded: Loaded, report: dict[str, Any]) -> int:
    """Print what the kernel's approval did; its exit code."""
    if "error" in report:
        raise CliError(int(report["code"]), report["error"])
    for o in report["outcomes"]:
        say(
            f"step {o['number']} ({o['kind']}): {o['status']}"
            + (f": {o['message']}" if o["message"] else "")
        )
    if report["stopped"]:
        say(report["stopped"])
    if report["left_pending"]:
        left = report["left_pending"]
        say(
            f"{count(left, 'approved step')} {plural('was', left)} not run "
            f"and {plural('is', left)} pending again"
        )
    done = [o for o in report["outcomes"] if o["status"] == "done"]
    if done:
        say(
            f"saved to {shown(loaded.path)}; undo the last step with "
            f"`planbook rollback {shown(loaded.path)}`"
        )
    if report.get("interrupted") or report["stopped"] == _CLEAN_STOP:
        say("planbook: interrupted: steps not yet run stay pending", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK if report["ok"] else EXIT_FAILED


# --- retention and sharing (storage) -----------------------------------------------------------
def cmd_gc(args: argparse.Namespace) -> int:
    for option, value in (("--keep", args.keep), ("--keep-plans", args.keep_plans)):
        if value is not None and value < 1:
            # 0 or less would drop every checkpoint (or plan): that is `planbook strip`'s job.
            raise CliError(
                EXIT_USAGE,
                f"{option} {value}: give a count of 1 or more (`planbook strip` removes "
                "all of planbook's metadata)",
            )
    loaded = load(args.notebook, need_plan=False)
    session = file_session(loaded)
    report = planbook_errors(
        loaded, lambda: session.gc(keep_checkpoints=args.keep, keep_plans=args.keep_plans)
    )
    say(f"{args.notebook}: {report}")
    return EXIT_OK


def cmd_strip(args: argparse.Namespace) -> int:
    if args.notebook in (None, "-"):  # a git clean filter: stdin to stdout
        data = sys.stdin.buffer.read()
        try:
            out = strip_metadata(data.decode("utf-8"), "stdin")
        except (MetadataError, UnicodeDecodeError) as exc:
            raise CliError(EXIT_NOT_NOTEBOOK, str(exc)) from None
        sys.stdout.buffer.write(out.encode("utf-8"))
        return EXIT_OK
    path = Path(args.notebook)
    if not path.is_file():
        raise CliError(EXIT_MISSING, f"{args.notebook}: no such file; pass an .ipynb file")
    try:
        stripped = strip_file(path, args.notebook)
    except MetadataError as exc:
        raise CliError(EXIT_NOT_NOTEBOOK, str(exc)) from None
    except OSError as exc:
        if unwritable(exc) is None:
            raise
        raise cannot_write(shown(path)) from None
    if stripped:
        say(f"{args.notebook}: planbook metadata removed (plans, checkpoints, log)")
    else:
        say(f"{args.notebook}: no planbook metadata; left as it was")
    return EXIT_OK
