"""Run a cell's code in this IPython kernel and collect its outputs as nbformat dicts."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Protocol

from planbook.errors import NotInKernel


@dataclass
class CellRun:
    outputs: list[dict[str, Any]] = field(default_factory=list)
    execution_count: int | None = None
    error: str | None = None
    interrupted: bool = False


class CodeRunner(Protocol):
    def run(self, source: str) -> CellRun: ...


class _OutputSink:
    """Collects outputs in the order they happen, the way a frontend would show them."""

    def __init__(self) -> None:
        self.outputs: list[dict[str, Any]] = []

    def stream(self, name: str, text: str) -> None:
        last = self.outputs[-1] if self.outputs else None
        if last is not None and last["output_type"] == "stream" and last["name"] == name:
            last["text"] += text
        elif text:
            self.outputs.append({"output_type": "stream", "name": name, "text": text})

    def rich(self, kind: str, data: dict[str, Any], metadata: dict[str, Any], **extra: Any) -> None:
        self.outputs.append(
            {"output_type": kind, "data": dict(data), "metadata": dict(metadata), **extra}
        )


class _StreamTo(io.TextIOBase):
    def __init__(self, sink: _OutputSink, name: str) -> None:
        self._sink, self._name = sink, name

    def write(self, text: str) -> int:
        self._sink.stream(self._name, text)
        return len(text)

    def writable(self) -> bool:
        return True


@cache
def _hooks() -> tuple[type[Any], type[Any]]:
    """The classes that catch a cell's displays and result, made once: made per step, each
    was a new traitlets class to set up (about half a millisecond a step)."""
    # heavy: IPython
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher

    class Publisher(DisplayPublisher):  # type: ignore[misc,unused-ignore]
        def __init__(self, shell: Any, sink: _OutputSink, original: Any) -> None:
            self.__dict__.update(_sink=sink, _original=original)
            # No shell here: given one, a publisher registers two execution hooks on it that
            # stay for the kernel's life (a pair per step ever run, called by every later
            # cell: after 1,000 steps each cell the person ran called 2,000 of them).
            super().__init__(shell=None)
            self.shell = shell

        def publish(
            self,
            data: dict[str, Any],
            metadata: dict[str, Any] | None = None,
            *args: Any,
            **kwargs: Any,
        ) -> None:
            self._sink.rich("display_data", data, metadata or {})

        def clear_output(self, wait: bool = False) -> None:
            self._sink.outputs.clear()

        def __getattr__(self, name: str) -> Any:
            # Everything but publishing stays the kernel's: ipykernel calls set_parent on it for
            # messages handled on other threads (a panel's Stop), ipywidgets registers hooks.
            if name in ("_sink", "_original"):
                raise AttributeError(name)
            return getattr(self._original, name)

    class ResultHook(DisplayHook):  # type: ignore[misc,unused-ignore]
        def __init__(self, shell: Any, sink: _OutputSink) -> None:
            super().__init__(shell=shell)
            self._sink, self._shell = sink, shell

        def __call__(self, result: Any = None) -> None:
            # a trailing `;` hides the result, as IPython's own hook does (quiet() reads the
            # cell from the history run_cell just stored it in)
            if result is None or self.quiet():
                return
            data, metadata = self._shell.display_formatter.format(result)
            self._sink.rich(
                "execute_result", data, metadata, execution_count=self._shell.execution_count
            )

    return Publisher, ResultHook


#: id(shell) -> (the shell, its catchers): made once per kernel and lent to each step (made per
#: step, setting up two traitlets objects was most of what a small cell's capture cost).
_kept: dict[int, tuple[Any, Any, Any]] = {}


def _catchers(shell: Any, sink: _OutputSink, original: Any) -> tuple[Any, Any]:
    """The publisher and result hook for one run, catching into ``sink``. A run nested in a
    step's run (its code approves another plan) gets its own: the kept ones are in use."""
    publisher_class, hook_class = _hooks()
    kept = _kept.get(id(shell))
    if kept is None or kept[0] is not shell or original is kept[1]:
        publisher, hook = publisher_class(shell, sink, original), hook_class(shell, sink)
        if kept is None or kept[0] is not shell:
            _kept[id(shell)] = (shell, publisher, hook)
        return publisher, hook
    _, publisher, hook = kept
    publisher.__dict__.update(_sink=sink, _original=original)
    hook._sink = sink
    return publisher, hook


@contextmanager
def _capture(shell: Any, sink: _OutputSink) -> Iterator[None]:
    original = shell.display_pub
    trap = shell.display_trap
    saved = sys.stdout, sys.stderr, shell.display_pub, sys.displayhook, trap.hook
    sys.stdout, sys.stderr = _StreamTo(sink, "stdout"), _StreamTo(sink, "stderr")
    shell.display_pub, result_hook = _catchers(shell, sink, original)
    sys.displayhook = result_hook
    # run_cell installs ``display_trap.hook`` as sys.displayhook when no cell is running (a step
    # approved from the panel runs outside any cell): without this the last expression's result
    # would go to the kernel's own hook and never reach the target cell.
    trap.hook = result_hook
    # The traceback goes into the target cell (the runner builds that output itself), not
    # into the cell that approved the step, which reports the failure in one line.
    own_hook = vars(shell).get("_showtraceback")
    shell._showtraceback = lambda *args: None
    try:
        yield
    finally:
        sys.stdout, sys.stderr, shell.display_pub, sys.displayhook, trap.hook = saved
        if own_hook is None:
            del shell._showtraceback
        else:
            shell._showtraceback = own_hook


class IPythonRunner:
    """Executes code through ``shell.run_cell`` so magics and history behave as usual."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell

    def run(self, source: str) -> CellRun:
        shell = self.shell
        sink = _OutputSink()
        with _capture(shell, sink):
            result = shell.run_cell(source, store_history=True)
        run = CellRun(outputs=sink.outputs, execution_count=result.execution_count)
        for output in run.outputs:
            # Out [n] is In [n], as for a cell the person ran (the shell's counter has moved on
            # by the time the hook sees the value when the run is nested in a cell)
            if output["output_type"] == "execute_result":
                output["execution_count"] = result.execution_count
        error = result.error_before_exec or result.error_in_exec
        if error is not None:
            etype = type(error)
            try:
                traceback = shell.InteractiveTB.structured_traceback(
                    etype, error, error.__traceback__
                )
            except Exception:  # the traceback formatter must not hide the real error
                traceback = [f"{etype.__name__}: {error}"]
            run.outputs.append(
                {
                    "output_type": "error",
                    "ename": etype.__name__,
                    "evalue": str(error),
                    "traceback": list(traceback),
                }
            )
            run.interrupted = isinstance(error, KeyboardInterrupt)
            run.error = f"{etype.__name__}: {error}" if str(error) else etype.__name__
        return run


class NoKernelRunner:
    def run(self, source: str) -> CellRun:
        raise NotInKernel(
            "running a cell needs an IPython kernel; run this plan from a notebook, "
            "or with `planbook approve NB` which starts one"
        )


def default_runner() -> CodeRunner:
    try:
        # heavy: IPython
        from IPython import get_ipython
    except ImportError:
        return NoKernelRunner()
    shell = get_ipython()
    return NoKernelRunner() if shell is None else IPythonRunner(shell)
