"""Errors raised by models.

Exception tree::

    TetherError  (the root of every tether error: tether/errors.py draws the whole tree)
    └── ModelError               base: a model call failed (other 4xx answers are raised as this)
        ├── ModelConfigError     the caller's configuration is wrong: spec, API key, model name
        ├── ModelUnavailableError  the endpoint could not be reached or kept failing after retries
        └── ModelResponseError   the endpoint answered 200, but not with a usable chat completion

Messages name the model and the base URL; they never contain the API key.
"""

from __future__ import annotations

from ..errors import TetherError

__all__ = ["ModelConfigError", "ModelError", "ModelResponseError", "ModelUnavailableError"]


class ModelError(TetherError):
    """A model call failed; ``status_code`` is the HTTP status when the endpoint sent one."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class ModelConfigError(ModelError):
    """The model is misconfigured: unknown spec, missing or rejected API key, unknown model."""


class ModelUnavailableError(ModelError):
    """The endpoint was unreachable, timed out or kept failing (408/409/429/5xx) after retries."""


class ModelResponseError(ModelError):
    """The endpoint answered, but the body is not a well-formed chat completion."""


for _cls in (ModelError, ModelConfigError, ModelUnavailableError, ModelResponseError):
    _cls.__module__ = "tether.models"
