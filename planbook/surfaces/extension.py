"""``%load_ext planbook``: the magics, and the channel of the in-cell review when a JupyterLab
or Notebook 7 page with the extension is there."""

from __future__ import annotations

from typing import Any

from planbook.surfaces.comm.channel import register as register_cell_review
from planbook.surfaces.magics import register as register_magics


def load(ipython: Any) -> None:
    register_magics(ipython)
    register_cell_review(ipython)
