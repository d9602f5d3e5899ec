"""The document of a headless run (``jupyter nbconvert --execute``, ``papermill``, ``jupyter
execute``): the notebook file the run executes (documents/headless_run.py finds it), read only
when the tool writes its own copy over it at the end."""

from __future__ import annotations

from planbook.documents.file import FileNotebook
from planbook.documents.headless_run import HeadlessRun
from planbook.errors import UsageMistake


class HeadlessNotebook(FileNotebook):
    """The notebook file a headless run executes (no page holds it)."""

    def __init__(self, run: HeadlessRun, description: str | None = None) -> None:
        super().__init__(
            run.notebook, description=description or f"file: {run.notebook.name} ({run.why()})"
        )
        self.run = run


class OverwrittenNotebook(HeadlessNotebook):
    """The notebook file of a run whose tool writes its own copy over it when the run ends:
    whatever planbook saved would be dropped silently then, so every save is refused loudly
    (one line naming the options that keep planbook's changes) and nothing is lost."""

    def __init__(self, run: HeadlessRun) -> None:
        super().__init__(
            run,
            f"file: {run.notebook.name} ({run.why()}; read only: {run.tool} overwrites it "
            "when the run ends)",
        )

    def _commit(self) -> None:
        raise UsageMistake(self.run.overwrite_refusal())


def open_headless(run: HeadlessRun) -> HeadlessNotebook:
    """The document for ``run``: its notebook file, read only when the tool overwrites it."""
    return OverwrittenNotebook(run) if run.overwrites else HeadlessNotebook(run)
