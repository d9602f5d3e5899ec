"""The kernel ``planbook approve`` runs in: a real one (jupyter_client) started in the notebook's
folder, the notebook's code cells re-run there so ``run_cell`` steps find their variables
(``planbook.surfaces.cli.rerun`` says which), then the approval made inside it, so outputs and
checkpoints land in the file exactly as they would from ``%approve``.

The kernel sends its report back as one JSON line after ``SENTINEL``; Ctrl-C interrupts the
kernel once and lets the executor stop between steps.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planbook.errors import CliError
from planbook.model.words import count
from planbook.sessions.open_file import approver
from planbook.surfaces.cli.exit_codes import EXIT_FAILED, EXIT_KERNEL
from planbook.surfaces.cli.loading import Loaded, read_nb
from planbook.surfaces.cli.paths import shown
from planbook.surfaces.cli.rerun import choose
from planbook.surfaces.say import say as say_visibly

#: A line the kernel prints with its JSON report; nothing a notebook prints looks like it.
SENTINEL = "__planbook_report__:"


def selection(spec: str | int | None) -> dict[str, Any]:
    """``Session.approve`` keywords: an int from ``--first`` is a count, not a step number."""
    return {"first": spec} if isinstance(spec, int) else {"steps": spec}


def _approve_code(
    path: Path, spec: str | int | None, by: str, hashes: dict[str, str] | None = None
) -> str:
    return "\n".join(
        [
            "import dataclasses as _pb_dc, json as _pb_json, planbook as _pb",
            "from pathlib import Path as _PbPath",
            "from planbook.surfaces.cli.exit_codes import as_cli_error as _pb_cli_error",
            "from planbook.errors import PlanbookError as _PbError, speak_as as _pb_speak",
            f"_pb_speak('cli', notebook={shown(path)!r})  # step messages in the command's words",
            "try:",
            f"    _pb_s = _pb.session(notebook={str(path)!r}, fresh=True)",
            f"    _pb_r = _pb_s.approve(**{selection(spec)!r}, by={by!r}, shown={hashes!r})",
            "    _pb_out = {'ok': _pb_r.ok, 'stopped': _pb_r.stopped,",
            "               'left_pending': _pb_r.left_pending,",
            "               'outcomes': [_pb_dc.asdict(o) for o in _pb_r.outcomes]}",
            "except _PbError as _pb_e:",
            # paths as the person pastes them where they run `planbook`, not in the kernel
            f"    _pb_c = _pb_cli_error(_pb_e, _PbPath({str(path)!r}), _PbPath({os.getcwd()!r}))",
            "    _pb_out = {'error': str(_pb_c), 'code': _pb_c.code}",
            f"print({SENTINEL!r} + _pb_json.dumps(_pb_out))",
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
    shown: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Start a kernel in the notebook's folder, re-run its code cells, approve there.
    ``shown``: the steps as the CLI printed them (``Session.step_hashes``): a step changed
    since is refused, and nothing runs."""
    from jupyter_client.manager import start_new_kernel  # heavy: jupyter_client and zmq

    say: Callable[[str], None] = (
        (lambda _m: None) if quiet else (lambda m: say_visibly(m, file=sys.stderr))
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
        code = _approve_code(loaded.path, spec, by or f"{approver()} (planbook CLI)", shown)
        reply = _execute(kc, km, code, timeout=None, sink=lines.append)
        for line in "".join(lines).split("\n"):
            if line.startswith(SENTINEL):
                report: dict[str, Any] = json.loads(line[len(SENTINEL) :])
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
