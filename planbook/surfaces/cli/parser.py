"""The ``planbook`` command line as argparse declares it: one block per subcommand, each naming
the ``cmd_*`` function that runs it (``args.run``), every help page ending with the exit codes."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable

from planbook.surfaces.cli.commands import (
    cmd_answer,
    cmd_approve,
    cmd_gc,
    cmd_log,
    cmd_preview,
    cmd_reject,
    cmd_rollback,
    cmd_show,
    cmd_strip,
    cmd_takeover,
)
from planbook.surfaces.cli.demo import cmd_demo
from planbook.surfaces.cli.exit_codes import exit_codes_text
from planbook.surfaces.cli.serve_mcp import cmd_mcp
from planbook.surfaces.cli.trust import cmd_trust
from planbook.version import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="planbook",
        description="Review, approve and roll back the plan stored in a notebook, outside Jupyter.",
        epilog=exit_codes_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"planbook {__version__}")
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
        "The rollback is recorded and can itself be rolled back. Shell steps are undone where they "
        "ran in an overlay (Linux with user namespaces); elsewhere their effects stay.",
    )
    rollback.add_argument("notebook", help="the .ipynb file")
    rollback.add_argument(
        "checkpoint", nargs="?", help="checkpoint id, id prefix or number (see `planbook show`)"
    )
    rollback.add_argument(
        "--force", action="store_true", help="roll back even over changes made after the step ran"
    )
    rollback.add_argument(
        "--confirm",
        action="store_true",
        help="restore checkpoints recorded elsewhere (a received notebook's); what it writes "
        "is printed first",
    )

    preview = command(
        "preview",
        "run shell step N once in an overlay and show what it would change",
        cmd_preview,
        "Run shell step N once in the sandbox with the notebook's folder as an overlay (no "
        "network, writes kept apart and thrown away) and show the files it would create, change "
        "or delete, as diffs, with its exit code and output. The preview is kept on the step for "
        "every review; approving the step later says whether the real run matched it.",
    )
    preview.add_argument("notebook", help="the .ipynb file")
    preview.add_argument("step", type=int, help="the shell step's number (as `planbook show`)")
    color_flags(preview)

    log = command("log", "the audit trail: who approved what, when, with which hash", cmd_log)
    log.add_argument("notebook", help="the .ipynb file")
    log.add_argument("--json", action="store_true", help="machine-readable rows")

    takeover = command(
        "takeover",
        "settle a step another host left running, so it can be approved again",
        cmd_takeover,
        "A step being run carries its process and host. A process on this host that died is "
        "settled on its own; one on another host cannot be checked from here, so its steps "
        "wait. When that host is gone, take the step over: after you confirm, it is settled "
        "here as interrupted (nothing runs: a step whose change had not landed is pending "
        "again, one whose change landed keeps its checkpoint). A process on this host that is "
        "alive is never taken over.",
    )
    takeover.add_argument("notebook", help="the .ipynb file")
    takeover.add_argument("step", type=int, help="the step's number (see `planbook show`)")
    takeover.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    gc = command(
        "gc",
        "drop old checkpoints and the blobs only they used",
        cmd_gc,
        "Keep the newest checkpoints (keep_checkpoints in [tool.planbook], default 50) and, with "
        "keep_plans, the newest closed plans; drop every blob no kept checkpoint names. Rolling "
        "back to a dropped checkpoint is refused with a message.",
    )
    gc.add_argument("notebook", help="the .ipynb file")
    gc.add_argument(
        "--keep", type=int, metavar="K", help="checkpoints to keep, 1 or more (overrides config)"
    )
    gc.add_argument("--keep-plans", type=int, metavar="N", help="closed plans to keep, 1 or more")

    strip = command(
        "strip",
        "remove planbook's metadata for sharing (a git clean filter without NOTEBOOK)",
        cmd_strip,
        "Remove planbook's metadata (plans, checkpoints, log) from NOTEBOOK in place, keeping "
        "the file's style. Without NOTEBOOK (or with -) read a notebook on stdin and write it "
        "stripped to stdout: a git clean filter (see docs/checkpoints.md).",
    )
    strip.add_argument("notebook", nargs="?", help="the .ipynb file; - or nothing: stdin")

    answer = command(
        "answer",
        "answer a question an agent asked over MCP",
        cmd_answer,
        "Answer question QID (see `planbook show`) that an agent asked through planbook's MCP "
        "server: one of its options, the option's number, or your own words. The answer is "
        "recorded in the notebook with your name and signed with your key; the agent's "
        "wait_for_review receives it.",
    )
    answer.add_argument("notebook", help="the .ipynb file")
    answer.add_argument("question", metavar="QID", help="the question's id, such as q1")
    answer.add_argument(
        "answer", nargs="+", metavar="ANSWER", help="an option, its number, or text"
    )

    trust = command(
        "trust",
        "trust a notebook you moved, or the allow rules of a rules file you wrote",
        cmd_trust,
        "Vouch for FILE as yours, as `jupyter trust` does for a notebook. A notebook (.ipynb) "
        "you copied or moved gets its approvals, mode and checkpoints back (they are bound to "
        "where they were signed), and its folder's rules files are trusted too. A planbook.toml "
        "or pyproject.toml: its allow rules, as they are now, apply without review (an allow "
        "rule you have not trusted acts as ask). Without FILE: the rules files of the current "
        "folder. See docs/security.md.",
    )
    trust.add_argument(
        "notebook",
        nargs="?",
        metavar="FILE",
        help="a notebook, a planbook.toml or a pyproject.toml (default: the current folder)",
    )

    mcp = command(
        "mcp",
        "serve a notebook, or a folder of notebooks, to an agent over MCP (stdio)",
        cmd_mcp,
        "Serve NOTEBOOK_OR_FOLDER (default: the current folder) to any agent over the Model "
        "Context Protocol on stdin and stdout, the way agents start a server by command. The "
        "agent reads cells, files and the plan, and proposes steps; no tool approves, rejects "
        "or changes the mode: you review its steps here, in Jupyter or with `planbook approve`. "
        "Needs the mcp extra: pip install 'planbook[mcp]' (see docs/mcp.md).",
    )
    mcp.add_argument(
        "target",
        nargs="?",
        default=".",
        metavar="NOTEBOOK_OR_FOLDER",
        help="the .ipynb file, or a folder of notebooks (default: the current folder)",
    )

    demo = command(
        "demo", "stage, review, approve and roll back a plan on a copy of the quickstart", cmd_demo
    )
    demo.add_argument("--dir", help="folder for the copy (default: a new temp folder)")
    color_flags(demo)
    return parser
