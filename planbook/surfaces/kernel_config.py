"""``%config Planbook.model = "openai:gpt-4.1"``: the agent's settings as an IPython
configurable, registered by ``%load_ext planbook`` and nothing heavier (traitlets only: the
agent's config is loaded when a setting is made)."""

from __future__ import annotations

from typing import Any

from traitlets import Any as AnyTrait
from traitlets import Bool, Float, Int, Unicode, observe
from traitlets.config import Configurable


class Planbook(Configurable):
    """``%config Planbook.model = "openai:gpt-4.1"`` (or an OpenAI-compatible URL)."""

    model = AnyTrait(
        None,
        allow_none=True,
        help="Model string, OpenAI-compatible URL "
        "(http://host/v1#model), or a pydantic-ai Model / planbook.agents.Scripted.",
    ).tag(config=True)
    base_url = Unicode(None, allow_none=True, help="OpenAI-compatible endpoint.").tag(config=True)
    stream = Bool(True, help="Stream model responses when possible.").tag(config=True)
    context_tokens = Int(32_000, help="The model's context window, in tokens.").tag(config=True)
    summarise_at = Float(
        0.5, help="Share of the context past which older turns are summarised by the model."
    ).tag(config=True)

    @observe("model", "base_url", "stream", "context_tokens", "summarise_at")
    def _apply(self, change: dict[str, Any]) -> None:
        # heavy: pydantic, the agent's config and the kernel's session (on the first setting)
        from planbook.agent.config import KERNEL_SETTINGS
        from planbook.agent.context import config_of
        from planbook.surfaces import api

        KERNEL_SETTINGS[change["name"]] = change["new"]
        config = config_of(api.session())
        setattr(config, change["name"], change["new"])


def add_configurable(ipython: Any) -> None:
    """Make ``%config Planbook.x = ...`` work in this shell (once, however often it loads)."""
    if not any(type(c).__name__ == "Planbook" for c in ipython.configurables):
        ipython.configurables.append(Planbook(parent=ipython))
