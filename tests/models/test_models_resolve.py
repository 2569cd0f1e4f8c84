"""resolve_model: model specs from configs to model objects."""

from __future__ import annotations

from typing import Any

import pytest

from _process_support import Messages, Tools
from tether.models import ModelConfigError, ModelReply, OpenAIModel, ScriptedModel, resolve_model


def test_an_openai_spec_gives_an_openai_model_with_the_options() -> None:
    model = resolve_model("openai:gpt-5-mini", timeout=12.0, max_retries=1, base_url="http://x/v1")
    assert isinstance(model, OpenAIModel)
    assert (model.model, model.timeout, model.max_retries) == ("gpt-5-mini", 12.0, 1)
    assert model.base_url == "http://x/v1"


def test_scripted_gives_a_fresh_scripted_model() -> None:
    first, second = resolve_model("scripted"), resolve_model("scripted")
    assert isinstance(first, ScriptedModel)
    assert first is not second


def test_transport_options_are_ignored_for_a_scripted_model() -> None:
    assert isinstance(resolve_model("scripted", timeout=60.0, max_retries=2), ScriptedModel)


def test_an_object_with_complete_is_returned_as_it_is() -> None:
    class Mine:
        name = "mine"

        async def complete(self, messages: Messages, tools: Tools = None) -> ModelReply:
            return ModelReply(content="mine", tool_calls=[])

        async def aclose(self) -> None:
            pass

    mine = Mine()
    assert resolve_model(mine, timeout=5.0) is mine


@pytest.mark.parametrize("spec", ["gpt-5-mini", "openai:", "openai:  ", "anthropic:claude", ""])
def test_an_unknown_spec_lists_the_accepted_forms(spec: str) -> None:
    with pytest.raises(ModelConfigError, match="'openai:<model name>', 'scripted'"):
        resolve_model(spec)


@pytest.mark.parametrize("spec", [42, None, object()])
def test_an_object_without_complete_is_refused(spec: Any) -> None:
    with pytest.raises(ModelConfigError, match="an object with an async complete"):
        resolve_model(spec)


def test_an_unknown_option_is_refused_by_name() -> None:
    with pytest.raises(ModelConfigError, match="temperature; accepted: api_key, base_url"):
        resolve_model("openai:gpt-5-mini", temperature=0.2)
