"""Run a cell's code in this IPython kernel and collect its outputs as nbformat dicts."""

from __future__ import annotations

from dataclasses import dataclass, field
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


class IPythonRunner:
    """Executes code through ``shell.run_cell`` so magics, history and ``Out`` behave as usual."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell

    def run(self, source: str) -> CellRun:
        from IPython.utils.capture import capture_output

        shell = self.shell
        with capture_output(stdout=True, stderr=True, display=True) as captured:
            result = shell.run_cell(source, store_history=True)
        run = CellRun(execution_count=result.execution_count)
        if captured.stdout:
            run.outputs.append({"output_type": "stream", "name": "stdout", "text": captured.stdout})
        if captured.stderr:
            run.outputs.append({"output_type": "stream", "name": "stderr", "text": captured.stderr})
        for item in captured.outputs:
            run.outputs.append(
                {"output_type": "display_data", "data": dict(item.data), "metadata": dict(item.metadata)}
            )
        if result.result is not None:
            data, metadata = shell.display_formatter.format(result.result)
            run.outputs.append(
                {
                    "output_type": "execute_result",
                    "execution_count": result.execution_count,
                    "data": data,
                    "metadata": metadata,
                }
            )
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
        from IPython import get_ipython
    except ImportError:
        return NoKernelRunner()
    shell = get_ipython()
    return NoKernelRunner() if shell is None else IPythonRunner(shell)
