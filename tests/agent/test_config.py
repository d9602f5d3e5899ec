"""Model configuration: a clear one-line message when no model or key is configured."""

from __future__ import annotations

import pytest

import planbook
from planbook.agent.config import AgentConfig, resolve_model
from planbook.agent.context import config_of
from planbook.agent.run import plan_task
from planbook.errors import NoModelConfigured, RulesError


def test_no_model_says_how_and_that_planbook_works_without_it(
    session: planbook.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PLANBOOK_MODEL", raising=False)
    with pytest.raises(NoModelConfigured) as info:
        plan_task(session, "clean the data")
    message = str(info.value)
    assert "%config Planbook.model" in message
    assert "works without an agent" in message
    assert "\n" not in message
    assert session.current_plan() is None  # nothing was started


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(NoModelConfigured, match="OPENAI_API_KEY is not set"):
        resolve_model(AgentConfig(model="openai:gpt-4.1"))
    with pytest.raises(NoModelConfigured, match="ANTHROPIC_API_KEY is not set"):
        resolve_model(AgentConfig(model="anthropic:claude-sonnet-4-5"))
    with pytest.raises(NoModelConfigured, match="is not `provider:model`"):
        resolve_model(AgentConfig(model="gpt-4.1"))


def test_openai_compatible_url_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic_ai.models.openai import OpenAIChatModel

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = resolve_model(AgentConfig(model="http://127.0.0.1:11434/v1#llama3.1"))
    assert isinstance(model, OpenAIChatModel)
    assert model.model_name == "llama3.1"
    assert model.base_url.startswith("http://127.0.0.1:11434/v1")
    other = resolve_model(AgentConfig(model="qwen3", base_url="http://127.0.0.1:8000/v1"))
    assert other.model_name == "qwen3"


def test_key_in_environment_builds_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert resolve_model(AgentConfig(model="openai:gpt-4.1")).model_name == "gpt-4.1"


def test_env_default_model(session: planbook.Session, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANBOOK_MODEL", "openai:gpt-4.1-mini")
    assert config_of(session).model == "openai:gpt-4.1-mini"


def test_a_broken_rule_file_is_reported_before_the_run(session: planbook.Session) -> None:
    from planbook.agents import Scripted

    root = session.workspace.root
    (root / "planbook.toml").write_text('[permissions]\nshell = "sometimes"\n')
    with pytest.raises(RulesError, match="must be one of allow, ask, deny"):
        plan_task(session, "x", model=Scripted([]))
    assert session.current_plan() is None


def test_without_pydantic_ai_the_message_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pydantic_ai.models", None)
    with pytest.raises(NoModelConfigured, match=r"pip install \"planbook\[agent\]\""):
        resolve_model(AgentConfig(model="openai:gpt-4.1"))
