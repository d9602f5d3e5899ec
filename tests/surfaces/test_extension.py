"""``%load_ext planbook`` registers stand-ins for the magics (surfaces/extension.py): they must
be exactly the magics the real registration adds, or a magic would be missing until another
one ran first, and each must hand its call and its help to the real one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from planbook.errors import spoken_as
from planbook.surfaces import api
from planbook.surfaces.extension import MAGICS, StandIn, load


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    shell = InteractiveShell.instance()
    with spoken_as("api"):  # loading makes errors speak as the magics: not past this test
        yield shell
    api.close()
    InteractiveShell.clear_instance()


def planbook_magics(shell: InteractiveShell, ignore: dict[str, set[str]]) -> dict[tuple, object]:
    return {
        (kind, name): fn
        for kind, table in shell.magics_manager.magics.items()
        for name, fn in table.items()
        if name not in ignore[kind]
    }


def test_the_stand_ins_are_the_magics_planbook_registers(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {kind: set(table) for kind, table in shell.magics_manager.magics.items()}
    load(shell)
    assert "opens at first use" in capsys.readouterr().out
    stand_ins = planbook_magics(shell, before)
    assert set(stand_ins) == set(MAGICS)
    assert all(isinstance(fn, StandIn) for fn in stand_ins.values())

    # help before the first use is the real magic's (`%approve?`)
    assert "Approve pending steps" in (stand_ins[("line", "approve")].getdoc() or "")
    # the first call loads every real magic in place of the stand-ins, then runs its own
    shell.run_line_magic("mode", "")
    out = capsys.readouterr().out
    assert "notebook: memory:" in out and out.endswith("planbook: mode plan\n"), out
    real = planbook_magics(shell, before)
    assert set(real) == set(MAGICS)
    assert not any(isinstance(fn, StandIn) for fn in real.values())
    shell.run_line_magic("mode", "")
    assert capsys.readouterr().out == "planbook: mode plan\n"  # said once, at the first use
