"""``planbook``: review and run a notebook's plan outside Jupyter (a pull request, CI, a terminal).

A thin surface like the magics: it reads the notebook, calls a Session and prints what happened.
``approve`` is the one command that needs a kernel: it starts a real one (jupyter_client) in the
notebook's folder, re-runs the notebook's code cells there so ``run_cell`` steps find their
variables (``planbook.surfaces.cli.rerun`` says which), and approves inside it, so outputs and
checkpoints
land in the file exactly as they would from ``%approve``.

Each subcommand is one ``cmd_*`` function and one block in ``build_parser``; every exit code is
in ``EXIT_CODES``, the one table the help, docs/cli.md and the README show.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from planbook.model.words import count, plural

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_MISSING = 3
EXIT_NOT_NOTEBOOK = 4
EXIT_NOTHING = 5
EXIT_METADATA = 6
EXIT_KERNEL = 7
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141

#: Every exit code and what it means: the help's epilog, and the table in docs/cli.md and the
#: README (tests/test_cli.py checks that they say the same).
EXIT_CODES: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "done: every step asked for ran"),
    (EXIT_FAILED, "a step failed or conflicted, or a rollback would overwrite a later change"),
    (EXIT_USAGE, "bad arguments: unknown option, bad step range, unknown checkpoint"),
    (EXIT_MISSING, "the notebook file does not exist"),
    (EXIT_NOT_NOTEBOOK, "the file is not a Jupyter notebook"),
    (EXIT_NOTHING, "nothing to do: no plan, no pending step, or nothing left to roll back"),
    (EXIT_METADATA, "the planbook metadata is corrupted or from a newer planbook (left untouched)"),
    (EXIT_KERNEL, "the kernel could not start, died, or a re-run cell timed out"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C): the run ended between steps"),
    (EXIT_PIPE, "the output was cut short: its reader stopped early (as `head` does)"),
)


def exit_codes_text() -> str:
    return "exit codes:\n" + "".join(f"  {code:<4} {text}\n" for code, text in EXIT_CODES)


#: A line the kernel prints with its JSON report; nothing a notebook prints looks like it.
_SENTINEL = "__planbook_report__:"

#: What the executor reports when a KeyboardInterrupt ended a run between steps.
_CLEAN_STOP = "interrupted: the run ended cleanly between steps"


def shown(path: Path) -> str:
    """``path`` as the person can paste it here: relative to the current folder when inside it,
    else absolute; quoted for the shell when it needs to be."""
    full = path.resolve()
    try:
        text = str(full.relative_to(Path.cwd().resolve()))
    except ValueError:
        text = str(full)
    return shlex.quote(text)


class CliError(Exception):
    """A one-line message for the person and the exit code that goes with it."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# --- reading the notebook -------------------------------------------------------------------
def read_nb(source: Path | bytes) -> Any:
    """nbformat's reader (untyped), from a file or from bytes."""
    import nbformat

    reader: Any = nbformat  # untyped library: keep its Any in one place
    if isinstance(source, bytes):
        return reader.reads(source.decode("utf-8"), as_version=4)
    return reader.read(source, as_version=4)


@dataclass
class Loaded:
    path: Path
    nb: Any  # nbformat.NotebookNode
    state: Any  # planbook.model.store.PlanbookState


def load(path_text: str, *, need_plan: bool = True) -> Loaded:
    """Read a notebook and its planbook state, turning every way it can be wrong into a CliError."""

    from planbook.engine.store import parse_state
    from planbook.errors import MetadataError

    path = Path(path_text).expanduser()
    if not path.exists():
        raise CliError(EXIT_MISSING, f"{path_text}: no such file")
    if path.is_dir():
        raise CliError(EXIT_NOT_NOTEBOOK, f"{path_text}: is a folder, not a notebook (.ipynb)")
    try:
        nb = read_nb(path)
    except Exception as exc:  # nbformat raises JSON, validation and version errors alike
        kind = "not valid JSON" if isinstance(exc, ValueError) else type(exc).__name__
        raise CliError(
            EXIT_NOT_NOTEBOOK, f"{path_text}: not a Jupyter notebook ({kind}); pass an .ipynb file"
        ) from None
    if not isinstance(nb.get("cells"), list):
        raise CliError(EXIT_NOT_NOTEBOOK, f"{path_text}: not a Jupyter notebook (no cells)")
    try:
        state = parse_state(nb.metadata.get("planbook"), path.name)
    except MetadataError as exc:
        raise CliError(EXIT_METADATA, exc.said_to("cli", notebook=shlex.quote(path_text))) from None
    if need_plan and not state.plans:
        raise CliError(
            EXIT_NOTHING,
            f"{path_text}: has no planbook plan; stage steps in Jupyter (`%%propose`) "
            "or with planbook.session(notebook=...).propose",
        )
    return Loaded(path.resolve(), nb, state)


def read_session(loaded: Loaded) -> Any:
    """A session over an in-memory copy: for showing, never writes the file."""
    from planbook.documents.memory import MemoryNotebook
    from planbook.sessions.session import Session
    from planbook.workspace.files import Workspace

    doc = MemoryNotebook(notebook=loaded.nb, description=f"file: {loaded.path.name}")
    workspace = Workspace(loaded.path.parent, protected=(loaded.path,))
    return Session(doc, workspace, notebook_path=loaded.path)


def file_session(loaded: Loaded) -> Any:
    """A session that edits the file (reject, rollback: no kernel needed)."""
    from planbook.documents.file import FileNotebook
    from planbook.sessions.session import Session
    from planbook.workspace.files import Workspace

    doc = FileNotebook(loaded.path, description=f"file: {loaded.path.name} (planbook CLI)")
    workspace = Workspace(loaded.path.parent, protected=(loaded.path,))
    return Session(doc, workspace, notebook_path=loaded.path)


def step_spec(steps: str | None, first: int | None) -> str | int | None:
    """``--steps 3`` is step 3 (as ``%approve 3``); ``--first 3`` the first three (an int)."""
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


def code_for(exc: Exception) -> int:
    """The exit code for a planbook error (also called in the kernel ``approve`` starts)."""
    from planbook.errors import MetadataError, NothingToDo, RollbackConflict, UsageMistake

    if isinstance(exc, MetadataError):
        return EXIT_METADATA
    if isinstance(exc, NothingToDo):
        return EXIT_NOTHING
    if isinstance(exc, RollbackConflict):
        return EXIT_FAILED
    if isinstance(exc, UsageMistake):
        return EXIT_USAGE
    return EXIT_FAILED


def _planbook_errors(loaded: Loaded, action: Callable[[], Any]) -> Any:
    """Run a Session call; its errors become one-line CliErrors with the right exit code, their
    fixes named as `planbook` commands on this notebook."""
    from planbook.errors import PlanbookError

    try:
        return action()
    except PlanbookError as exc:
        message = exc.said_to("cli", notebook=shown(loaded.path))
        raise CliError(code_for(exc), message) from None


def _pending(loaded: Loaded, session: Any) -> None:
    plan = session.current_plan()
    if plan is None or not any(s.status == "pending" for s in plan.steps):
        raise CliError(
            EXIT_NOTHING,
            f"{shown(loaded.path)}: no step is pending; "
            f"see the plan with `planbook show {shown(loaded.path)}`",
        )


# --- commands -------------------------------------------------------------------------------
def cmd_show(args: argparse.Namespace) -> int:
    loaded = load(args.notebook)
    color = args.color if args.color is not None else sys.stdout.isatty()
    session = read_session(loaded)
    print(session.render_text(color=color), end="")
    if loaded.state.checkpoints:  # numbered as `planbook rollback NB N` takes them
        print("\ncheckpoints:\n" + session.checkpoints_text())
    return EXIT_OK


def cmd_reject(args: argparse.Namespace) -> int:
    loaded = load(args.notebook)
    plan = next((p for p in reversed(loaded.state.plans) if p.is_open), loaded.state.plans[-1])
    if not any(s.status in ("pending", "skipped") for s in plan.steps):
        raise CliError(EXIT_NOTHING, f"{args.notebook}: nothing to reject: no step is pending")
    session = file_session(loaded)
    spec = args.steps.strip() if args.steps else None
    rejected = _planbook_errors(loaded, lambda: session.reject(spec))
    numbers = {s.id: n for n, s in enumerate(session.current_plan().steps, start=1)}
    print(f"rejected {count(rejected, 'step')}: {', '.join(str(numbers[s.id]) for s in rejected)}")
    return EXIT_OK


def cmd_rollback(args: argparse.Namespace) -> int:
    loaded = load(args.notebook, need_plan=False)
    if not loaded.state.checkpoints:
        raise CliError(EXIT_NOTHING, f"{args.notebook}: nothing to roll back: no step has run yet")
    session = file_session(loaded)
    record = _planbook_errors(loaded, lambda: session.rollback(args.checkpoint, force=args.force))
    print(
        f"rolled back {count(record.undid, 'step')} ({_checkpoint_name(session, record)}); "
        "undo this with "
        f"`planbook rollback {shown(loaded.path)} {record.id}`"
    )
    return EXIT_OK


def cmd_log(args: argparse.Namespace) -> int:
    loaded = load(args.notebook, need_plan=False)
    rows = audit_rows(loaded.state)
    if args.json:
        print(json.dumps(rows, indent=2))
    elif not rows:
        print(f"{args.notebook}: no planbook history yet")
    else:
        for row in rows:
            print(f"{row['at']}  {row['by']:<20} {row['event']:<10} {row['detail']}")
    return EXIT_OK


def audit_rows(state: Any) -> list[dict[str, str]]:
    """The audit trail: the session log (staged, approved with its hash, rejected, rollbacks,
    modes), each approval followed by the results of the steps it ran."""
    approvals = {a.sha256: a for plan in state.plans for a in plan.approvals}
    results: dict[str, list[dict[str, str]]] = {}
    numbers: dict[str, int] = {}
    for plan in state.plans:
        numbers.update({s.id: n for rev in plan.revisions for n, s in enumerate(rev.steps, 1)})
    for plan in state.plans:
        kinds = {s.id: s.operation.kind for rev in plan.revisions for s in rev.steps}
        for r in plan.results:
            detail = f"{plan.id} step {numbers.get(r.step_id, '?')} ({kinds.get(r.step_id, '?')})"
            detail += f" {r.step_id}" + (f" checkpoint {r.checkpoint}" if r.checkpoint else "")
            detail += f": {r.message}" if r.message else ""
            row = {"at": _when(r.at), "by": "executor", "event": r.status, "detail": detail}
            results.setdefault(r.step_id, []).append(row)
    rows: list[dict[str, str]] = []
    for entry in state.log:
        by = entry.by
        if entry.event == "approved":
            sha = entry.detail.rpartition("sha256=")[2]
            by = approvals[sha].by if sha in approvals and approvals[sha].by else by
        detail = _with_numbers(entry.event, entry.detail, numbers)
        rows.append({"at": _when(entry.at), "by": by, "event": entry.event, "detail": detail})
        if entry.event == "approved":
            # The log's timestamps are whole seconds: place each result after its approval.
            ids = entry.detail.partition(" steps ")[2].partition(" ")[0].split(",")
            for step_id in ids:
                if results.get(step_id):
                    rows.append(results[step_id].pop(0))
    leftover = [row for rows_left in results.values() for row in rows_left]
    return rows + sorted(leftover, key=lambda row: row["at"])


def _with_numbers(event: str, detail: str, numbers: dict[str, int]) -> str:
    """The log names steps by id; a person reads them by number: "step 2 (id)"."""

    def label(ids: list[str]) -> str:
        return ",".join(str(numbers.get(i, "?")) for i in ids) + f" ({','.join(ids)})"

    if event == "staged":
        step_id, _, kind = detail.partition(" ")
        if step_id in numbers:
            return f"step {numbers[step_id]} {kind} ({step_id})"
    elif event == "approved" and " steps " in detail:
        head, _, rest = detail.partition(" steps ")
        ids, _, tail = rest.partition(" ")
        return f"{head} steps {label(ids.split(','))} {tail}"
    elif event == "rejected" and all(i in numbers for i in detail.split(",")):
        return f"steps {label(detail.split(','))}"
    return detail


def _when(value: Any) -> str:
    from datetime import datetime

    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def cmd_approve(args: argparse.Namespace) -> int:
    loaded = load(args.notebook)
    spec = step_spec(args.steps, args.first)
    preview = read_session(loaded)
    _pending(loaded, preview)
    # Validate the selection and check drift before paying for a kernel.
    dry = _planbook_errors(loaded, lambda: preview.approve(**_selection(spec), dry_run=True))
    if args.dry_run:
        for o in dry.outcomes:
            print(
                f"step {o.number} ({o.kind}): {o.status}" + (f": {o.message}" if o.message else "")
            )
        print("dry run: nothing was applied")
        return EXIT_FAILED if any(o.status != "would run" for o in dry.outcomes) else EXIT_OK
    report = run_in_kernel(
        loaded, spec, rerun=not args.no_rerun, timeout=args.timeout, by=args.by, quiet=args.quiet
    )
    return print_report(loaded, report)


def print_report(loaded: Loaded, report: dict[str, Any]) -> int:
    if "error" in report:
        raise CliError(int(report["code"]), report["error"])
    for o in report["outcomes"]:
        print(
            f"step {o['number']} ({o['kind']}): {o['status']}"
            + (f": {o['message']}" if o["message"] else "")
        )
    if report["stopped"]:
        print(report["stopped"])
    if report["left_pending"]:
        left = report["left_pending"]
        print(
            f"{count(left, 'approved step')} {plural('was', left)} not run "
            f"and {plural('is', left)} pending again"
        )
    done = [o for o in report["outcomes"] if o["status"] == "done"]
    if done:
        print(
            f"saved to {shown(loaded.path)}; undo the last step with "
            f"`planbook rollback {shown(loaded.path)}`"
        )
    if report.get("interrupted") or report["stopped"] == _CLEAN_STOP:
        print("interrupted: steps not yet run stay pending", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK if report["ok"] else EXIT_FAILED


def _checkpoint_name(session: Any, record: Any) -> str:
    from planbook.present.checkpoint_names import checkpoint_name

    return checkpoint_name(record, session.store.state.plans, session.checkpoints())


def _selection(spec: str | int | None) -> dict[str, Any]:
    """``Session.approve`` keywords: an int from ``--first`` is a count, not a step number."""
    return {"first": spec} if isinstance(spec, int) else {"steps": spec}


# --- the kernel -----------------------------------------------------------------------------
def _approve_code(path: Path, spec: str | int | None, by: str) -> str:
    return "\n".join(
        [
            "import dataclasses as _pb_dc, json as _pb_json, planbook as _pb",
            "from planbook.surfaces.cli.main import code_for as _pb_code",
            "from planbook.errors import PlanbookError as _PbError",
            "try:",
            f"    _pb_s = _pb.session(notebook={str(path)!r}, fresh=True)",
            f"    _pb_r = _pb_s.approve(**{_selection(spec)!r}, by={by!r})",
            "    _pb_out = {'ok': _pb_r.ok, 'stopped': _pb_r.stopped,",
            "               'left_pending': _pb_r.left_pending,",
            "               'outcomes': [_pb_dc.asdict(o) for o in _pb_r.outcomes]}",
            "except _PbError as _pb_e:",
            f"    _pb_out = {{'error': _pb_e.said_to('cli', notebook={shown(path)!r}),",
            "                'code': _pb_code(_pb_e)}",
            f"print({_SENTINEL!r} + _pb_json.dumps(_pb_out))",
        ]
    )


def run_in_kernel(
    loaded: Loaded,
    spec: str | int | None,
    *,
    rerun: bool,
    timeout: float,
    by: str | None,
    quiet: bool = False,
) -> dict[str, Any]:
    """Start a kernel in the notebook's folder, re-run its code cells, approve there."""
    from jupyter_client.manager import start_new_kernel

    from planbook.engine.store import _user

    say: Callable[[str], None] = (
        (lambda _m: None) if quiet else (lambda m: print(m, file=sys.stderr))
    )
    env = {**os.environ, "JPY_SESSION_NAME": str(loaded.path)}
    try:
        # The kernel's own stderr (a TCP warning, debugger notes) is noise for a CLI user.
        km, kc = start_new_kernel(
            kernel_name="python3",
            cwd=str(loaded.path.parent),
            env=env,
            startup_timeout=60,
            stderr=subprocess.DEVNULL,
        )
    except Exception as exc:  # jupyter_client raises RuntimeError, TimeoutError, OSError...
        raise CliError(EXIT_KERNEL, f"could not start a python3 kernel: {exc}") from None
    try:
        before = loaded.path.read_bytes()
        if rerun:
            _rerun_cells(kc, km, loaded, timeout, say)
            if _plan_changed(loaded, before):
                loaded.path.write_bytes(before)
                raise CliError(
                    EXIT_FAILED,
                    "re-running the notebook's cells changed its plan, "
                    "so nothing was approved (the file is restored); use --no-rerun",
                )
        lines: list[str] = []
        code = _approve_code(loaded.path, spec, by or f"{_user()} (planbook CLI)")
        reply = _execute(kc, km, code, timeout=None, sink=lines.append)
        for line in "".join(lines).split("\n"):
            if line.startswith(_SENTINEL):
                report: dict[str, Any] = json.loads(line[len(_SENTINEL) :])
                report["interrupted"] = reply["_interrupted"]
                return report
        detail = reply.get("evalue") or "no report"
        raise CliError(EXIT_KERNEL, f"the kernel did not report back ({detail})")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _rerun_cells(
    kc: Any, km: Any, loaded: Loaded, timeout: float, say: Callable[[str], None]
) -> None:
    """Re-run the cells ``planbook.surfaces.cli.rerun`` chooses; say what, why, and what was
    left out."""
    from planbook.surfaces.cli.rerun import choose

    choice = choose(loaded.nb.cells)
    where = shown(loaded.path)
    if not choice.run:
        say(f"planbook: no code cell of {where} to re-run first (`--no-rerun` skips this step)")
        return
    left_out = ""
    if choice.skipped:
        left_out = (
            f"; left out {count(choice.skipped, 'cell')} that use planbook or what only such a "
            "cell defines (re-running them would stage steps again)"
        )
    say(
        f"planbook: re-running {count(choice.run, 'code cell')} of {where} in a fresh kernel, "
        f"so the steps find the variables they use{left_out}; `--no-rerun` skips this"
    )
    for cell in choice.run:
        reply = _execute(kc, km, cell.source, timeout=timeout, sink=lambda _t: None)
        if reply["_interrupted"]:
            raise KeyboardInterrupt
        if reply.get("status") == "error":
            say(
                f"planbook: cell {cell.get('id')} raised {reply.get('ename')}: "
                f"{reply.get('evalue')} (approving anyway: a step that uses what it defines "
                "will fail and stop the run)"
            )


def _plan_changed(loaded: Loaded, before: bytes) -> bool:

    now = read_nb(loaded.path)
    old = read_nb(before)
    return bool(now.metadata.get("planbook") != old.metadata.get("planbook"))


def _execute(
    kc: Any, km: Any, code: str, *, timeout: float | None, sink: Callable[[str], None]
) -> dict[str, Any]:
    """Run ``code``; stream text goes to ``sink``. Ctrl-C interrupts the kernel once and waits
    for the cell to end (the executor stops between steps); a second Ctrl-C gives up."""
    msg_id = kc.execute(code, store_history=True, allow_stdin=False)
    deadline = None if timeout is None else time.monotonic() + timeout
    interrupted = False
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except queue.Empty:
            if deadline is not None and time.monotonic() > deadline:
                raise CliError(
                    EXIT_KERNEL,
                    f"a cell did not finish within {timeout:g}s; raise --timeout or use --no-rerun",
                ) from None
            if not km.is_alive():
                raise CliError(EXIT_KERNEL, "the kernel died; nothing more was run") from None
            continue
        except KeyboardInterrupt:
            if interrupted:
                raise
            interrupted = True
            km.interrupt_kernel()
            continue
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            sink(msg["content"]["text"])
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    while True:  # the matching execute_reply is on the shell channel
        reply = kc.get_shell_msg(timeout=30)
        if reply.get("parent_header", {}).get("msg_id") == msg_id:
            return {**reply.get("content", {}), "_interrupted": interrupted}


# --- demo -----------------------------------------------------------------------------------
def quickstart_source() -> Path:
    """The quickstart shipped in the wheel, or the repository's own in a source checkout."""
    packaged = Path(__file__).resolve().parents[2] / "_notebooks" / "quickstart.ipynb"
    if packaged.exists():
        return packaged
    repo = Path(__file__).resolve().parents[3] / "notebooks" / "quickstart.ipynb"
    if repo.exists():
        return repo
    raise CliError(EXIT_MISSING, "the quickstart notebook is not installed with this planbook")


def cmd_demo(args: argparse.Namespace) -> int:
    import importlib.util

    import nbformat

    # The quickstart analyses the Palmer penguins; say what is missing before starting a kernel.
    missing = [m for m in ("pandas", "palmerpenguins") if importlib.util.find_spec(m) is None]
    if missing:
        raise CliError(
            EXIT_USAGE,
            f"the demo's data set needs {' and '.join(missing)}: "
            f"pip install {' '.join(missing)} (or the planbook[examples] extra)",
        )
    folder = (
        Path(args.dir).resolve() if args.dir else Path(tempfile.mkdtemp(prefix="planbook-demo-"))
    )
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "quickstart.ipynb"
    shutil.copyfile(quickstart_source(), target)
    nb = read_nb(target)
    nb.metadata.pop("planbook", None)  # start from a clean history whatever the copy carried
    writer: Any = nbformat
    writer.write(nb, target)
    color = args.color if args.color is not None else sys.stdout.isatty()

    def title(text: str) -> None:
        print(f"\n\x1b[1m== {text}\x1b[0m" if color else f"\n== {text}")

    title(f"1. a scripted plan, staged on a copy of the quickstart: {target}")
    session = file_session(load(str(target), need_plan=False))
    stage_demo_plan(session)
    print(session.render_text(color=color), end="")
    title("2. planbook approve --steps 1-2 (a real kernel runs the approved steps)")
    loaded = load(str(target))
    report = run_in_kernel(loaded, "1-2", rerun=True, timeout=120, by=None, quiet=True)
    code = print_report(loaded, report)
    new_cell = next(c for c in read_nb(target).cells if c.get("id") == "demo-mass")
    print("output stored in the notebook for step 1:")
    for out in new_cell.get("outputs", []):
        text = out.get("text") or out.get("data", {}).get("text/plain", "")
        print("   " + "\n   ".join(str(text).rstrip().splitlines()))
    title("3. the plan now (step 3 is still pending)")
    print(read_session(load(str(target))).render_text(color=color), end="")
    title("4. planbook rollback (undo the last step: the markdown note)")
    cmd_rollback(argparse.Namespace(notebook=str(target), checkpoint=None, force=False))
    title("5. planbook log")
    cmd_log(argparse.Namespace(notebook=str(target), json=False))
    print(f"\ntry: planbook show {shown(target)}\n     planbook approve {shown(target)}")
    return code


def stage_demo_plan(session: Any) -> None:
    """Three steps an assistant might propose for the penguins analysis."""
    from planbook.model.operations import InsertCell

    session.new_plan("summarise body mass by species")
    # A fixed id so the demo can point at the new cell; the Python API picks a random one.
    session.stage(
        InsertCell(
            cell_id="demo-mass",
            after="load-penguins",
            source='penguins.groupby("species")["body_mass_g"].mean().round(1)',
        ),
        reason="average body mass per species",
        run=True,
    )
    session.propose.insert_cell(
        "Body mass by species, computed by the demo plan.",
        after="demo-mass",
        cell_type="markdown",
        reason="say what the new cell shows",
    )
    session.propose.write_file(
        "NOTES.md",
        "# Notes\n\n- Gentoo are the heaviest species.\n",
        reason="keep a note next to the notebook",
    )


# --- retention and sharing (storage) -----------------------------------------------------------
def cmd_gc(args: argparse.Namespace) -> int:
    from planbook.errors import PlanbookError

    loaded = load(args.notebook, need_plan=False)
    session = file_session(loaded)
    try:
        report = session.gc(keep_checkpoints=args.keep, keep_plans=args.keep_plans)
    except PlanbookError as exc:
        raise CliError(EXIT_USAGE, str(exc)) from None
    print(f"{args.notebook}: {report}")
    return EXIT_OK


def cmd_strip(args: argparse.Namespace) -> int:
    from planbook.engine.retention import strip_text
    from planbook.errors import MetadataError

    if args.notebook in (None, "-"):  # a git clean filter: stdin to stdout
        data = sys.stdin.buffer.read()
        try:
            out = strip_text(data.decode("utf-8"), "stdin")
        except (MetadataError, UnicodeDecodeError) as exc:
            raise CliError(EXIT_NOT_NOTEBOOK, str(exc)) from None
        sys.stdout.buffer.write(out.encode("utf-8"))
        return EXIT_OK
    path = Path(args.notebook)
    if not path.is_file():
        raise CliError(EXIT_MISSING, f"{args.notebook}: no such file; pass an .ipynb file")
    text = path.read_text(encoding="utf-8")
    try:
        out = strip_text(text, args.notebook)
    except MetadataError as exc:
        raise CliError(EXIT_NOT_NOTEBOOK, str(exc)) from None
    if out != text:
        from planbook.documents.file import _atomic_write

        _atomic_write(path.resolve(), out.encode("utf-8"))
        print(f"{args.notebook}: planbook metadata removed (plans, checkpoints, log)")
    else:
        print(f"{args.notebook}: no planbook metadata; left as it was")
    return EXIT_OK


# --- entry point ----------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="planbook",
        description="Review, approve and roll back the plan stored in a notebook, outside Jupyter.",
        epilog=exit_codes_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"planbook {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str, help_text: str, run: Callable[[argparse.Namespace], int], description: str = ""
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name,
            help=help_text,
            description=textwrap.fill(description or help_text, 79),
            epilog=exit_codes_text(),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.set_defaults(run=run)
        return p

    def color_flags(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--color",
            dest="color",
            action="store_true",
            default=None,
            help="colour diffs (default: when writing to a terminal)",
        )
        p.add_argument("--no-color", dest="color", action="store_false")

    show = command("show", "the plan and its diffs", cmd_show)
    show.add_argument("notebook", help="the .ipynb file")
    color_flags(show)

    approve = command(
        "approve",
        "approve pending steps and run them in a real kernel",
        cmd_approve,
        "Approve pending steps and run exactly those, in order, each behind a checkpoint, in a "
        "real Jupyter kernel started in the notebook's folder. Outputs, results and checkpoints "
        "are written into the notebook. Before approving, the notebook's code cells are re-run "
        "in that kernel (in order; a cell that raises is reported and the approval goes on) so "
        "that run_cell steps find the variables they use. Cells that use planbook itself "
        "(magics or `planbook`) are left out, so nothing is staged again, and so are cells that "
        "use a name only such a cell defines.",
    )
    approve.add_argument("notebook", help="the .ipynb file")
    approve.add_argument(
        "--steps",
        metavar="SPEC",
        help="step numbers: 3 (step 3), 1,3-5; default: every pending step",
    )
    approve.add_argument("--first", type=int, metavar="N", help="the first N pending steps")
    approve.add_argument(
        "--dry-run",
        action="store_true",
        help="check what would run (selection, drift); start no kernel",
    )
    approve.add_argument(
        "--no-rerun",
        action="store_true",
        help="do not re-run the notebook's cells before approving",
    )
    approve.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="limit for each re-run cell (default 600)",
    )
    approve.add_argument(
        "--by", help="who approves, recorded with the approval (default: '<user> (planbook CLI)')"
    )
    approve.add_argument("--quiet", action="store_true", help="no progress on stderr")

    reject = command("reject", "reject pending steps (all by default)", cmd_reject)
    reject.add_argument("notebook", help="the .ipynb file")
    reject.add_argument("--steps", metavar="SPEC", help="step numbers: 3, 1,3-5; default: all")

    rollback = command(
        "rollback",
        "undo the last step, or everything after a checkpoint",
        cmd_rollback,
        "Undo the last executed step, or everything after CHECKPOINT, restoring cells and files. "
        "The rollback is recorded and can itself be rolled back. Shell commands are not undone.",
    )
    rollback.add_argument("notebook", help="the .ipynb file")
    rollback.add_argument(
        "checkpoint", nargs="?", help="checkpoint id, id prefix or number (see `planbook show`)"
    )
    rollback.add_argument(
        "--force", action="store_true", help="roll back even over changes made after the step ran"
    )

    log = command("log", "the audit trail: who approved what, when, with which hash", cmd_log)
    log.add_argument("notebook", help="the .ipynb file")
    log.add_argument("--json", action="store_true", help="machine-readable rows")

    gc = command(
        "gc",
        "drop old checkpoints and the blobs only they used",
        cmd_gc,
        "Keep the newest checkpoints (keep_checkpoints in [tool.planbook], default 50) and, with "
        "keep_plans, the newest closed plans; drop every blob no kept checkpoint names. Rolling "
        "back to a dropped checkpoint is refused with a message.",
    )
    gc.add_argument("notebook", help="the .ipynb file")
    gc.add_argument("--keep", type=int, metavar="K", help="checkpoints to keep (overrides config)")
    gc.add_argument("--keep-plans", type=int, metavar="N", help="closed plans to keep")

    strip = command(
        "strip",
        "remove planbook's metadata for sharing (a git clean filter without NOTEBOOK)",
        cmd_strip,
        "Remove planbook's metadata (plans, checkpoints, log) from NOTEBOOK in place, keeping "
        "the file's style. Without NOTEBOOK (or with -) read a notebook on stdin and write it "
        "stripped to stdout: a git clean filter (see docs/checkpoints.md).",
    )
    strip.add_argument("notebook", nargs="?", help="the .ipynb file; - or nothing: stdin")

    demo = command(
        "demo", "stage, review, approve and roll back a plan on a copy of the quickstart", cmd_demo
    )
    demo.add_argument("--dir", help="folder for the copy (default: a new temp folder)")
    color_flags(demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        code = int(args.run(args))
        sys.stdout.flush()  # a closed pipe shows here, not at exit where it cannot be caught
        return code
    except CliError as exc:
        print(f"planbook: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        print("planbook: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `planbook show NB | head -2`: the reader has what it wanted. Point stdout at devnull
        # so the interpreter's last flush does not print a traceback either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE


def _version() -> str:
    from planbook import __version__

    return __version__


def _exit(argv: Sequence[str] | None = None) -> NoReturn:  # pragma: no cover
    sys.exit(main(argv))


if __name__ == "__main__":  # pragma: no cover
    _exit()
