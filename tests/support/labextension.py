"""The in-cell review extension for a test server: the built one, wherever planbook comes from.

An installed wheel puts it in ``<prefix>/share/jupyter/labextensions/planbook``; a checkout has
it in ``planbook/labextension`` once built. Tests link the checkout's build into the server's
private JUPYTER_DATA_DIR, so they test this tree's extension and never the user's.
"""

from __future__ import annotations

from pathlib import Path

import planbook

BUILT = Path(planbook.__file__).resolve().parent / "labextension"
BUILD_HINT = "cd js/labextension && npm ci && npm run build"


def built_labextension() -> Path:
    """The built extension of the planbook under test; missing is an error, never a skip."""
    if not (BUILT / "package.json").is_file() or not (BUILT / "static").is_dir():
        raise FileNotFoundError(f"the in-cell review extension is not built: run `{BUILD_HINT}`")
    return BUILT


def expose_labextension(data_dir: Path) -> Path:
    """Link the built extension into ``data_dir``/labextensions (a server's JUPYTER_DATA_DIR)."""
    target = Path(data_dir) / "labextensions" / "planbook"
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or target.exists():
        target.unlink()
    target.symlink_to(built_labextension(), target_is_directory=True)
    return target
