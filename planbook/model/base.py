"""The base of every pydantic model in planbook."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

#: The config of a module-level TypeAdapter, for the same reason.
DEFERRED = ConfigDict(defer_build=True)


class PlanbookModel(BaseModel):
    """A pydantic model whose validator is built when it is first used, not when its module is
    imported. Building the first validator in a process makes pydantic look through every
    installed distribution for plugins (about 100 ms in a kernel with a data-science stack),
    and planbook defines some forty models: ``%load_ext planbook`` on a notebook without a plan
    uses none of them, so it pays for neither."""

    model_config = ConfigDict(defer_build=True)
