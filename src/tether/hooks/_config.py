"""Kept for the importers of ``tether.hooks._config`` outside the engine: the declaration of a
hook now lives in hooks/kinds/ (``HookConfig`` in kinds/_registry.py, what every kind shares in
kinds/_base.py). Import ``HookConfig`` from ``tether`` or ``tether.hooks``."""

from .kinds._base import SecretText as SecretText
from .kinds._base import masked_errors as masked_errors
from .kinds._registry import HookConfig as HookConfig

__all__ = ["HookConfig", "SecretText", "masked_errors"]
