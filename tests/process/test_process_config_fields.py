"""ProcessConfig refuses, naming the field and what is allowed, values that would only fail
later: a model name with spaces around it, and a journal that is no file."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tether import ProcessConfig


@pytest.mark.parametrize("model", ["openai: gpt-5-mini", "openai:gpt-5-mini ", "openai:", "gpt"])
def test_a_model_string_other_than_openai_name_or_scripted_is_refused(model: str) -> None:
    with pytest.raises(
        ValidationError, match="use 'openai:<name>' \\(no spaces around the name\\)"
    ):
        ProcessConfig(model=model)


@pytest.mark.parametrize("model", ["openai:gpt-5-mini", "scripted"])
def test_the_supported_model_strings_are_taken(model: str) -> None:
    assert ProcessConfig(model=model).model == model


@pytest.mark.parametrize("path", [":memory:", "", "   "])
def test_a_journal_path_that_is_no_file_is_refused(path: str) -> None:
    with pytest.raises(ValidationError, match=r"journal_path .* is no file"):
        ProcessConfig(journal_path=path)
