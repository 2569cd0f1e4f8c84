"""Kept for the importers of ``tether.hooks._prompt`` outside the engine: the prompt kind now
lives in hooks/kinds/_prompt.py."""

from .kinds._prompt import BUILDERS as BUILDERS
from .kinds._prompt import DEFAULT_MODELS as DEFAULT_MODELS
from .kinds._prompt import PromptHookConfig as PromptHookConfig

__all__ = ["BUILDERS", "DEFAULT_MODELS", "PromptHookConfig"]
