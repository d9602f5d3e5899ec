"""This person's Jupyter data folder (``jupyter_data_dir()``), kept per value of what it depends on.

``jupyter_data_dir()`` resolves the home folder's real path, a few system calls, and planbook asks
for it at every save of a trusted notebook (Jupyter's notary lives there) and at every signed
record (planbook's own key): kept per value of the environment it reads, so a test or a person
that changes ``JUPYTER_DATA_DIR`` gets the new folder at once.
"""

from __future__ import annotations

import os

from jupyter_core.paths import jupyter_data_dir

#: What ``jupyter_data_dir()`` reads from the environment.
_DATA_DIR_ENV = ("JUPYTER_DATA_DIR", "JUPYTER_PLATFORM_DIRS", "XDG_DATA_HOME", "HOME")
_data_dirs: dict[tuple[str | None, ...], str] = {}


def data_dir() -> str:
    """``jupyter_data_dir()`` for the environment as it is now."""
    env = tuple(os.environ.get(name) for name in _DATA_DIR_ENV)
    found = _data_dirs.get(env)
    if found is None:
        found = _data_dirs[env] = jupyter_data_dir()
    return found
