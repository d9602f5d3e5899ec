"""``planbook demo``: a scripted plan on a copy of the quickstart notebook, staged, reviewed,
approved in a real kernel and rolled back, so a newcomer sees the whole loop in one command."""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path

from planbook.errors import CliError
from planbook.model.operations import InsertCell
from planbook.sessions.session import Session
from planbook.surfaces.cli.commands import cmd_log, cmd_rollback, print_report
from planbook.surfaces.cli.exit_codes import EXIT_DEPENDENCY, EXIT_MISSING
from planbook.surfaces.cli.kernel import run_in_kernel
from planbook.surfaces.cli.loading import (
    file_session,
    load,
    read_nb,
    read_session,
    write_nb,
)
from planbook.surfaces.cli.paths import shown


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
    # The quickstart analyses the Palmer penguins; say what is missing before starting a kernel.
    missing = [m for m in ("pandas", "palmerpenguins") if importlib.util.find_spec(m) is None]
    if missing:
        raise CliError(
            EXIT_DEPENDENCY,
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
    write_nb(nb, target)
    color = args.color if args.color is not None else sys.stdout.isatty()

    def title(text: str) -> None:
        print(f"\n\x1b[1m== {text}\x1b[0m" if color else f"\n== {text}")

    title(f"1. a scripted plan, staged on a copy of the quickstart: {target}")
    session = file_session(load(str(target), need_plan=False))
    stage_demo_plan(session)
    print(session.render_text(color=color, shown_to="cli"), end="")
    title("2. planbook approve --steps 1-2 (a real kernel runs the approved steps)")
    loaded = load(str(target))
    report = run_in_kernel(
        loaded, "1-2", rerun=True, timeout=120, by=None, quiet=True, shown=session.last_shown("cli")
    )
    code = print_report(loaded, report)
    new_cell = next(c for c in read_nb(target).cells if c.get("id") == "demo-mass")
    print("output stored in the notebook for step 1:")
    for out in new_cell.get("outputs", []):
        text = out.get("text") or out.get("data", {}).get("text/plain", "")
        print("   " + "\n   ".join(str(text).rstrip().splitlines()))
    title("3. the plan now (step 3 is still pending)")
    print(read_session(load(str(target))).render_text(color=color), end="")
    title("4. planbook rollback (undo the last step: the markdown note)")
    cmd_rollback(
        argparse.Namespace(notebook=str(target), checkpoint=None, force=False, confirm=False)
    )
    title("5. planbook log")
    cmd_log(argparse.Namespace(notebook=str(target), json=False))
    print(f"\ntry: planbook show {shown(target)}\n     planbook approve {shown(target)}")
    return code


def stage_demo_plan(session: Session) -> None:
    """Three steps an assistant might propose for the penguins analysis."""
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
