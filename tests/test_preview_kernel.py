"""Previews asked for from the panel and from the in-cell review, in a real kernel with real
overlays: the command runs off the kernel's main thread, so the kernel answers meanwhile, the
step says it is being previewed, a second preview (or an approval) of it is refused in one line,
and the preview lands on the step without touching the workspace."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from planbook.workspace.overlay import overlay_probe
from tests.conftest import make_notebook
from tests.kernel_helper import Kernel, kernel
from tests.test_comm import Page
from tests.test_review_kernel import send_to_panel, wait_until_settled

pytestmark = [
    pytest.mark.kernel,
    pytest.mark.skipif(
        not overlay_probe().available, reason=f"no overlays here: {overlay_probe().reason}"
    ),
]

#: Slow enough to be seen running; writes one file the preview shows and the workspace never gets.
SLOW = "sleep 4; sed -i s/one/ONE/ notes.txt"


@contextmanager
def kernel_with(tmp_path: Path, *commands: str) -> Iterator[Kernel]:
    """A kernel on a notebook beside notes.txt ("one"), with planbook loaded as ``pb`` and
    ``commands`` staged as shell steps (each a Python expression of its arguments)."""
    nb = make_notebook(tmp_path / "n.ipynb", ["x = 1"])
    (tmp_path / "notes.txt").write_text("one\n")
    with kernel(tmp_path, JPY_SESSION_NAME=str(nb)) as k:
        k.run("%load_ext planbook")
        staged = "".join(f"pb.propose.shell({c})\n" for c in commands)
        k.run(f"import planbook; pb = planbook.session()\n{staged}")
        yield k


def answers_at_once(k: Kernel) -> float:
    began = time.monotonic()
    assert k.run("print(40 + 2)").stdout.strip() == "42"
    return time.monotonic() - began


def test_the_panels_preview_leaves_the_kernel_free_and_runs_once_per_step(
    tmp_path: Path,
) -> None:
    with kernel_with(tmp_path, f"{SLOW!r}, reason='slow'") as k:
        k.run("panel = pb.review()")
        step_id = k.run("print(pb.current_plan().steps[0].id)").stdout.strip()
        shown = json.loads(
            k.run("import json; print(json.dumps(pb.step_hashes(pb.current_plan().steps)))").stdout
        )
        preview = {"action": "preview", "revision": 1, "step_id": step_id}
        send_to_panel(k, "panel", preview)
        # the comm handler returned at once: the kernel runs cells while the command runs
        assert answers_at_once(k) < 3.0  # blocked, it would wait 4 s
        assert k.run("print(panel.state['steps'][0].get('previewing'))").stdout.strip() == "True"

        send_to_panel(k, "panel", preview)
        error = wait_until_settled(k, "panel.state['error']")
        assert error == "step 1 is being previewed already: its preview shows soon"
        approve = {"action": "approve", "revision": 1, "step_ids": [step_id], "shown": shown}
        send_to_panel(k, "panel", approve)
        error = wait_until_settled(k, "'approve it once' in (panel.state['error'] or '')")
        assert k.run("print(panel.state['error'])").stdout.strip() == (
            "step 1 is being previewed: approve it once its preview shows; nothing was applied"
        )

        wait_until_settled(k, "pb.current_plan().steps[0].preview is not None", timeout=40)
        step = k.run(
            "st = panel.state['steps'][0]; print(st.get('previewing'), st['status']); "
            "print(st['preview'])"
        ).stdout
        assert step.startswith("None pending\n# preview (exit 0): 1 changed"), step
        assert "-one" in step and "+ONE" in step
        assert (tmp_path / "notes.txt").read_text() == "one\n"
        # previewed once: the store's log says so once
        logged = k.run(
            "print(sum(e.event == 'preview' for e in pb.store.state.log))"
        ).stdout.strip()
        assert logged == "1"


def test_preview_from_a_shell_steps_box_on_the_page(tmp_path: Path) -> None:
    nb = make_notebook(tmp_path / "n.ipynb", ["x = 1", "y = 2"])
    (tmp_path / "notes.txt").write_text("one\n")
    with kernel(tmp_path, JPY_SESSION_NAME=str(nb)) as k:
        page = Page(k)
        page.run("%load_ext planbook")
        page.open()
        page.plan()
        page.run(
            "import planbook; pb = planbook.session()\n"
            "pb.propose.edit_cell('c1', 'x = 10', reason='bigger')\n"
            f"pb.propose.shell({SLOW!r}, reason='slow')"
        )
        shown = page.plan(lambda m: len(m["steps"]) == 2)
        shell = shown["steps"][1]
        assert (shell["kind"], shell["cell_id"], shell["anchor"]) == ("shell", None, {"end": True})
        assert (shell["command"], shell["preview"], shell["previewing"]) == (SLOW, None, False)

        page.decide(action="preview", step_id=shell["id"], revision=1)
        running = page.plan(lambda m: m["steps"][1]["previewing"])
        assert running["steps"][1]["preview"] is None
        page.decide(action="preview", step_id=shell["id"], revision=1)
        refused = page.error()
        assert refused["message"] == "step 2 is being previewed already: its preview shows soon"
        assert refused["step_id"] == shell["id"]

        done = page.plan(lambda m: m["steps"][1]["preview"] is not None)
        result = done["steps"][1]
        assert result["previewing"] is False
        assert result["preview"]["summary"] == "preview (exit 0): 1 changed"
        (change,) = result["preview"]["changes"]
        assert (change["path"], change["kind"]) == ("notes.txt", "changed")
        assert "-one\n+ONE\n" in change["diff"]
        assert (tmp_path / "notes.txt").read_text() == "one\n"

        # a cell step has nothing to preview: one line, nothing changed
        page.decide(action="preview", step_id=shown["steps"][0]["id"], revision=1)
        assert page.error()["message"].startswith(
            "step 1 is an edit cell step: only shell steps are previewed"
        )


def test_plan_shows_previews_and_one_that_times_out_says_so_in_one_line(tmp_path: Path) -> None:
    with kernel_with(
        tmp_path,
        "'sed -i s/one/ONE/ notes.txt', reason='shout'",
        "'echo half > half.txt; sleep 600', reason='never ends', timeout=2",
    ) as k:
        # the sed was previewed as it was staged: `%plan` shows its diff (text/plain too)
        plain = "".join(o["data"].get("text/plain", "") for o in k.run("%plan").outputs)
        assert "# preview (exit 0): 1 changed" in plain and "+ONE" in plain, plain

        began = time.monotonic()
        lines = k.run("%plan preview 2").stdout.splitlines()
        assert time.monotonic() - began < 20
        assert lines[0] == (
            "# preview timed out: the command was stopped at its time limit and nothing was "
            "applied; until then: 1 created"
        )
        assert not (tmp_path / "half.txt").exists()
        assert (tmp_path / "notes.txt").read_text() == "one\n"
        plain = "".join(o["data"].get("text/plain", "") for o in k.run("%plan").outputs)
        assert "# preview timed out: the command was stopped" in plain
        # asked again while nothing runs: it runs again (the refusal is only while one runs)
        assert k.run("%plan preview 1").stdout.startswith("# preview (exit 0): 1 changed")
