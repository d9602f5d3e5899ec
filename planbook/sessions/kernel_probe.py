"""What ``%load_ext planbook`` may learn about this kernel without opening its notebook (opening
parses the whole file, and loading must cost the same on 10 KB as on 50 MB): whether a headless
run owns the kernel, so that no page can be listening for planbook's comm."""

from __future__ import annotations

import os
from typing import Any

from planbook.documents.headless_run import named_notebook, started_by_a_tool


def headless_kernel(user_ns: dict[str, Any] | None) -> bool:
    """Does a headless run own this kernel? A tool started it (nbconvert, papermill, jupyter
    execute), or ``PLANBOOK_NOTEBOOK`` (papermill's parameter) names its notebook and no Jupyter
    server gave it one (no ``JPY_SESSION_NAME``). The opened session says the same
    (``Session.headless``), at the cost of finding the server and reading the notebook."""
    if started_by_a_tool():
        return True
    return named_notebook(user_ns) is not None and not os.environ.get("JPY_SESSION_NAME")
