"""Which model the agent talks to, and a clear message when none is configured.

The model is named by a string, as in pydantic-ai (``openai:gpt-4.1``, ``anthropic:claude-...``),
or by an OpenAI-compatible base URL (Ollama, vLLM): ``http://localhost:11434/v1#llama3.1`` (the
part after ``#`` is the model name), or ``base_url`` set apart. Keys come from the usual
environment variables (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``, ...). ``PLANBOOK_MODEL`` gives
the default. Nothing here imports pydantic-ai until a model is actually built.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ConfigDict, Field

from planbook.errors import NoModelConfigured
from planbook.model.base import PlanbookModel

if TYPE_CHECKING:
    from pydantic_ai.models import Model

__all__ = ["KERNEL_SETTINGS", "AgentConfig", "NoModelConfigured", "new_config", "resolve_model"]

_KEYS = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google-gla": "GEMINI_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
}
_HOW = (
    'configure one with `%config Planbook.model = "openai:gpt-4.1"` and OPENAI_API_KEY in the '
    'environment (or an OpenAI-compatible URL such as "http://localhost:11434/v1#llama3.1"); '
    "the rest of planbook (%%propose, %approve, the panel, rollback) works without an agent"
)


class AgentConfig(PlanbookModel):
    """The agent settings of one session (``state_of(session).config``)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    model: Any = Field(
        default=None,
        description="A model string, an OpenAI-compatible URL, or a pydantic-ai Model object.",
    )
    base_url: str | None = Field(default=None, description="OpenAI-compatible endpoint.")
    api_key: str | None = Field(default=None, repr=False, description="Overrides the env key.")
    max_tool_retries: int = Field(default=3, ge=0, description="Retries of a malformed call.")
    history_budget_chars: int = Field(
        default=60_000,
        gt=1000,
        description="Old tool outputs are pruned beyond this size (the fallback of summaries).",
    )
    context_tokens: int = Field(
        default=32_000, gt=1000, description="The model's context window, in tokens."
    )
    summarise_at: float = Field(
        default=0.5,
        gt=0,
        le=1,
        description="Share of the context (characters / 4 as tokens) past which older turns "
        "are summarised by the model.",
    )
    context_strategy: Literal["summarise", "prune"] = Field(
        default="summarise",
        description="summarise: the model summarises older turns (pruning if it cannot); "
        "prune: old tool output is cut mechanically.",
    )
    plan_in_requests: Literal["changes", "whole"] = Field(
        default="changes",
        description="changes: each request says what changed in the plan since the last one; "
        "whole: the whole plan with every request.",
    )
    max_requests: int = Field(
        default=200,
        ge=1,
        description="Model requests one run may make (pydantic-ai's default is 50).",
    )
    request_timeout: float = Field(
        default=120.0, gt=0, description="Seconds one model request may take before it is retried."
    )
    provider_retries: int = Field(
        default=3, ge=0, description="Retries of a failed model request (rate limit, 5xx, timeout)."
    )
    stream: bool = Field(default=True, description="Stream model responses when possible.")
    doom_loop_limit: int = Field(default=3, ge=2, description="Identical calls before refusing.")

    @property
    def context_limit_chars(self) -> int:
        """Characters of history past which older turns are compacted."""
        if self.context_strategy == "prune":
            return self.history_budget_chars
        return int(self.context_tokens * 4 * self.summarise_at)


#: Settings made with ``%config Planbook.x = ...`` in this kernel: every session opened later in
#: it (``planbook.session(..., fresh=True)``) starts from them too.
KERNEL_SETTINGS: dict[str, Any] = {}


def new_config() -> AgentConfig:
    """A session's first config: ``PLANBOOK_MODEL`` and this kernel's ``%config`` settings."""
    return AgentConfig(**{"model": os.environ.get("PLANBOOK_MODEL") or None, **KERNEL_SETTINGS})


def resolve_model(config: AgentConfig) -> Model:
    """A pydantic-ai Model for the config, or `NoModelConfigured` saying how to set one up."""
    try:
        from pydantic_ai.models import Model  # heavy: pydantic-ai (the agent extra)
    except ImportError:
        raise NoModelConfigured(
            'the agent needs pydantic-ai: `pip install "planbook[agent]"`; the rest of '
            "planbook (%%propose, %approve, the panel, rollback) works without it"
        ) from None

    spec = config.model
    if isinstance(spec, Model):
        return spec
    to_model = getattr(spec, "to_model", None)  # planbook.agents.Scripted and friends
    if callable(to_model):
        built = to_model()
        assert isinstance(built, Model)
        return built
    if spec is None or (isinstance(spec, str) and not spec.strip()):
        raise NoModelConfigured(f"no model configured for the agent: {_HOW}")
    if not isinstance(spec, str):
        raise NoModelConfigured(f"unknown model setting {spec!r}: {_HOW}")
    spec = spec.strip()
    base_url = config.base_url
    name = spec
    if spec.startswith(("http://", "https://")):
        base_url, _, name = spec.partition("#")
        name = name or "default"
    if base_url is not None:
        return _openai_compatible(name.removeprefix("openai:"), base_url, config.api_key)
    provider, sep, model_name = spec.partition(":")
    if not sep or not model_name:
        raise NoModelConfigured(f"model {spec!r} is not `provider:model`: {_HOW}")
    env = _KEYS.get(provider)
    if config.api_key is None and env is not None and not os.environ.get(env):
        raise NoModelConfigured(f"{env} is not set, so {spec!r} cannot be used: {_HOW}")
    if provider == "openai":
        return _openai_compatible(model_name, None, config.api_key)
    from pydantic_ai.models import infer_model  # heavy: pydantic-ai (the agent extra)

    try:
        return infer_model(spec)
    except ImportError as exc:
        raise NoModelConfigured(
            f"{spec!r} needs an extra package ({exc.name or exc}): "
            f'`pip install "pydantic-ai-slim[{provider}]"`, or {_HOW}'
        ) from None
    except Exception as exc:
        raise NoModelConfigured(f"cannot use model {spec!r} ({exc}): {_HOW}") from None


def _openai_compatible(name: str, base_url: str | None, api_key: str | None) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel  # heavy: pydantic-ai (the agent extra)
    from pydantic_ai.providers.openai import OpenAIProvider  # heavy: pydantic-ai (the agent extra)

    # Local servers (Ollama, vLLM) usually need no key, but the client insists on one.
    key = api_key or os.environ.get("OPENAI_API_KEY") or ("local" if base_url else None)
    return OpenAIChatModel(name, provider=OpenAIProvider(base_url=base_url, api_key=key))
