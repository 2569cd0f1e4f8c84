"""resolve_model: turn a model spec from a config into a model object."""

from __future__ import annotations

from typing import Any, Final

from ._base import Model
from ._errors import ModelConfigError
from ._openai import OpenAIModel
from ._scripted import SCRIPTED, ScriptedModel

__all__ = ["resolve_model"]

_OPENAI_PREFIX: Final = "openai:"
#: Keyword options OpenAIModel takes; other specs accept and ignore them, so a config can pass
#: its transport settings whatever model it names.
_OPTIONS: Final = frozenset({"api_key", "base_url", "max_retries", "timeout"})
_FORMS: Final = "'openai:<model name>', 'scripted', or an object with an async complete()"


def resolve_model(spec: str | Model, **options: Any) -> Model:
    """The model a spec names.

    ``"openai:<name>"`` gives ``OpenAIModel(name, **options)``; ``"scripted"`` gives a fresh
    ``ScriptedModel()``; an object with ``complete`` is returned as it is. Anything else, or
    an option other than ``api_key``, ``base_url``, ``max_retries`` and ``timeout``, raises
    ``ModelConfigError``.
    """
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise ModelConfigError(
            f"unknown model option(s) {', '.join(unknown)}; accepted: {', '.join(sorted(_OPTIONS))}"
        )
    if isinstance(spec, str):
        if spec == SCRIPTED:
            return ScriptedModel()
        if spec.startswith(_OPENAI_PREFIX) and spec[len(_OPENAI_PREFIX) :].strip():
            return OpenAIModel(spec[len(_OPENAI_PREFIX) :], **options)
        raise ModelConfigError(f"unknown model {spec!r}; use {_FORMS}")
    if callable(getattr(spec, "complete", None)):
        return spec
    raise ModelConfigError(f"a model must be {_FORMS}, got {type(spec).__name__}")
