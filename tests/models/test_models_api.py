"""The public surface of tether.models and tether.testing, and what importing them costs."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType

import pytest

import tether.models
import tether.testing
from tether.models import (
    ModelConfigError,
    ModelError,
    ModelResponseError,
    ModelUnavailableError,
)


def test_models_all_is_pinned() -> None:
    assert tether.models.__all__ == [
        "Model",
        "ModelConfigError",
        "ModelError",
        "ModelReply",
        "ModelResponseError",
        "ModelUnavailableError",
        "OpenAIModel",
        "ScriptedModel",
        "ToolCall",
        "resolve_model",
    ]


def test_testing_all_is_pinned() -> None:
    assert tether.testing.__all__ == ["FakeLLM"]


@pytest.mark.parametrize("package", [tether.models, tether.testing])
def test_public_classes_say_their_public_module(package: ModuleType) -> None:
    for name in package.__all__:
        obj = getattr(package, name)
        if isinstance(obj, type):
            assert obj.__module__ == package.__name__, name


@pytest.mark.parametrize("cls", [ModelConfigError, ModelUnavailableError, ModelResponseError])
def test_every_model_error_is_a_model_error(cls: type[Exception]) -> None:
    assert issubclass(cls, ModelError)


def _imported_after(statement: str) -> set[str]:
    heavy = ("openai", "httpx", "httpx2", "starlette", "uvicorn")
    code = f"import sys; {statement}; print(' '.join(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return set(out.split())


def test_importing_tether_models_imports_no_sdk_or_server() -> None:
    assert _imported_after("import tether, tether.models") == set()


def test_importing_tether_testing_imports_the_server_but_not_the_sdk() -> None:
    assert _imported_after("import tether.testing") == {"starlette", "uvicorn"}
