"""Errors of the HTTP layer, and the JSON shape every error answer has.

Exception tree::

    TetherError  (the root of every tether error: tether/errors.py draws the whole tree)
    ├── APIError          an error answer: status, code, message (raised inside a handler)
    └── APIConfigError    the API or webhook server was set up wrongly (also a ValueError)

Every error answer is ``{"error": {"code": "...", "message": "...", "details": [...]}}``
(``details`` only when there is a list of problems, each ``{"path", "message"}``).
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from starlette.responses import JSONResponse

from ..errors import TetherError

__all__ = ["PASSED_ON", "APIConfigError", "APIError", "error_response"]

#: What a request handler raises that is not answered with a 500 but passed on: the request's
#: task is cancelled, or the host is going down. Anything else (a hook's own BaseException
#: too) is an error of the runtime, logged through its redactor and answered with a 500.
PASSED_ON: Final = (asyncio.CancelledError, KeyboardInterrupt, SystemExit, GeneratorExit)


class APIError(TetherError):
    """An error answer; raised inside a request handler and turned into JSON."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers

    def response(self) -> JSONResponse:
        return error_response(self.status, self.code, self.message, self.details, self.headers)


class APIConfigError(TetherError, ValueError):
    """The API or a webhook server cannot start as configured (e.g. no token off loopback)."""


def error_response(
    status: int,
    code: str,
    message: str,
    details: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    error: dict[str, Any] = {"code": code, "message": message}
    if details:
        error["details"] = details
    return JSONResponse({"error": error}, status_code=status, headers=headers)


for _cls in (APIConfigError, APIError):
    _cls.__module__ = "tether.api"
