"""Where approved steps run: on the kernel's main thread, as a task on its event loop.

A widget's comm message does not always arrive on the main thread. On ipykernel 7 it is handled
on the main thread's loop (also while a cell awaits), but JupyterLab may send it on a kernel
subshell, whose messages are handled on that subshell's own thread, even while the main thread
is busy. Cells, and so steps, must run on the main thread: the run is handed to the main loop
from wherever the message came in.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any

#: Tasks started here, kept alive until they finish (the loop holds only weak references).
_TASKS: set[asyncio.Task[None]] = set()


def on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def running_main_loop() -> asyncio.AbstractEventLoop | None:
    """The loop running on the main thread right now, if called from it."""
    if not on_main_thread():
        return None
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def kernel_loop(
    home: asyncio.AbstractEventLoop | None = None,
) -> asyncio.AbstractEventLoop | None:
    """The event loop of this kernel's main thread (``home``: one seen running there before),
    or None outside a kernel."""
    loop = running_main_loop()
    if loop is not None:
        return loop
    if home is not None and not home.is_closed():
        return home
    try:
        # heavy: ipykernel
        from ipykernel.kernelbase import Kernel
    except ImportError:
        return None
    if not Kernel.initialized():
        return None
    loop = getattr(getattr(Kernel.instance(), "io_loop", None), "asyncio_loop", None)
    return loop if isinstance(loop, asyncio.AbstractEventLoop) else None


def _track(task: asyncio.Task[None]) -> None:
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)


def start_on_main(
    run: Callable[[], Coroutine[Any, Any, None]],
    run_now: Callable[[], None],
    home: asyncio.AbstractEventLoop | None = None,
) -> bool:
    """Start ``run()`` as a task on the main thread's loop; with no kernel loop at all (plain
    Python, tests) call ``run_now()`` here instead. True when a task was scheduled."""
    loop = kernel_loop(home)
    if loop is None:
        if not on_main_thread():
            raise RuntimeError(
                "planbook: no kernel event loop to run approved steps on; "
                "approve from the main thread (e.g. `%approve`)"
            )
        run_now()
        return False
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if on_main_thread() and running is loop:
        _track(loop.create_task(run()))
    else:
        loop.call_soon_threadsafe(lambda: _track(loop.create_task(run())))
    return True


def call_on_main(fn: Callable[[], None], home: asyncio.AbstractEventLoop | None = None) -> None:
    """Call ``fn`` on the main thread: now if this is it, else soon on the kernel's loop (for
    things that must start there, such as an agent run, which is a task on that loop)."""
    loop = kernel_loop(home)
    if on_main_thread() and (loop is None or running_main_loop() is loop):
        fn()
        return
    if loop is None:
        raise RuntimeError("planbook: no kernel event loop to hand this to")
    loop.call_soon_threadsafe(fn)
