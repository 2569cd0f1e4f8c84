"""OpenAIModel: any OpenAI-compatible chat-completions endpoint, through the official SDK.

The ``openai`` package takes over a second to import, so it is imported on the first call,
never when ``tether`` or ``tether.models`` is imported.
"""

from __future__ import annotations

import asyncio
import importlib
import ipaddress
import json
import math
import os
import sys
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, NoReturn
from urllib.parse import urlsplit

from .._urls import masked_in, masked_url
from ._base import ModelReply, ToolCall
from ._errors import ModelConfigError, ModelError, ModelResponseError, ModelUnavailableError

if TYPE_CHECKING:
    from openai import APIStatusError, AsyncOpenAI

__all__ = ["DEFAULT_BASE_URL", "OpenAIModel", "parse_chat_completion"]

DEFAULT_BASE_URL: Final = "https://api.openai.com/v1"

# Statuses the SDK retries; once retries are spent they mean "unavailable", not "refused".
_RETRYABLE: Final = frozenset({408, 409, 429})
_SNIPPET: Final = 120
# The longest the SDK waits between attempts (it honours a server's retry-after up to this).
_MAX_RETRY_WAIT: Final = 60.0
# What the SDK sends as the key to an endpoint on this machine when none is set (it needs one).
_NO_KEY: Final = "no-key"


class OpenAIModel:
    """A chat model behind an OpenAI-compatible endpoint.

    ``base_url`` and ``api_key`` default to the ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``
    environment variables, read when the first call opens the client (not at construction);
    an endpoint on this machine (a loopback address or ``localhost``: FakeLLM, Ollama, vLLM)
    needs no key.
    Each attempt is bounded by ``timeout`` seconds and the SDK retries connection errors,
    timeouts, 408/409/429 and 5xx up to ``max_retries`` times with backoff; then
    ``ModelUnavailableError`` is raised. The whole call is bounded too (every attempt's
    ``timeout``, at most 60 s between attempts, and a second), so an endpoint that sends its
    answer a byte at a time fails the call rather than holding it. The API key never appears
    in a message or repr. ``aclose`` releases the connection pool; a later call opens a new one.
    """

    __slots__ = (
        "_api_key",
        "_base_url",
        "_client",
        "_key",
        "_max_retries",
        "_timeout",
        "_url",
        "model",
        "name",
    )

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ModelConfigError(f"model must be a non-empty model name, got {model!r}")
        if model != model.strip():  # 'openai: gpt-5-mini': every request would get a 404
            raise ModelConfigError(f"model name {model!r} has spaces around it")
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout < math.inf
        ):
            raise ModelConfigError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ModelConfigError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        self.model = model
        self.name: str = f"openai:{model}"
        self._timeout = float(timeout)
        self._max_retries = max_retries
        self._base_url = base_url
        self._api_key = api_key
        self._client: AsyncOpenAI | None = None
        self._key = ""  # the key the open client uses, to scrub it from error text
        self._url = ""  # the base URL the open client uses

    @property
    def timeout(self) -> float:
        """Seconds per attempt (read-only: the open client was built with it)."""
        return self._timeout

    @property
    def max_retries(self) -> int:
        """Retries after the first attempt (read-only: the open client was built with it)."""
        return self._max_retries

    @property
    def base_url(self) -> str:
        """The endpoint in use (or, before the first call, the one the first call will use)."""
        if self._client is not None:
            return self._url
        return self._base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL

    def __repr__(self) -> str:
        return (
            f"OpenAIModel({self.model!r}, base_url={masked_url(self.base_url)!r}, "
            f"timeout={self.timeout!r}, max_retries={self.max_retries!r})"
        )

    async def _open(self) -> AsyncOpenAI:
        if self._client is not None:
            return self._client
        key = self._api_key if self._api_key is not None else os.environ.get("OPENAI_API_KEY")
        if not key and _is_loopback(self.base_url):
            key = _NO_KEY  # a model on this machine (FakeLLM, Ollama, vLLM) takes none
        if not key:
            raise ModelConfigError(
                f"{self.name}: no API key for {masked_url(self.base_url)}; set the "
                "OPENAI_API_KEY environment variable or pass api_key= (an endpoint on this "
                "machine, 127.0.0.1 or localhost, needs none)"
            )
        if "openai" not in sys.modules:
            # A second or more of imports: off the event loop, so that other tasks' timers
            # (hook timeouts, heartbeats) do not see a stalled loop.
            await asyncio.to_thread(importlib.import_module, "openai")
            if self._client is not None:  # a concurrent first call got there first
                return self._client
        url = self.base_url
        from openai import AsyncOpenAI

        try:
            self._client = AsyncOpenAI(
                api_key=key, base_url=url, timeout=self.timeout, max_retries=self.max_retries
            )
        except Exception as exc:  # the SDK's HTTP client refuses the URL (InvalidURL): a typo
            raise ModelConfigError(
                f"{self.name}: base URL {masked_url(url)!r} is not a URL ({exc})"
            ) from None
        self._key = "" if key == _NO_KEY else key  # (no secret to scrub)
        self._url = url
        return self._client

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        params: dict[str, Any] | None = None,
    ) -> ModelReply:
        """One chat completion; raises ``ModelError`` subclasses only. ``params`` are more
        request fields (temperature, max_tokens, or ``model`` for another model)."""
        client = await self._open()
        import openai

        request: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            request["tools"] = tools
        if params:
            request.update(params)
        deadline = self._deadline()
        try:
            # ``timeout`` bounds each read, not the answer: this bounds the whole call, so an
            # endpoint that sends its body a byte at a time cannot hold the run forever.
            async with asyncio.timeout(deadline):
                response = await client.chat.completions.with_raw_response.create(**request)
                body = response.content
        except TimeoutError as exc:
            self._fail(
                ModelUnavailableError,
                f"no complete answer from {self._url} within {deadline:g} s{self._tries()} "
                f"(timeout={self.timeout:g} s bounds each read, not the answer)",
                cause=exc,
            )
        except openai.APITimeoutError as exc:
            self._fail(
                ModelUnavailableError,
                f"no answer from {self._url} within {self.timeout:g} s{self._tries()}",
                cause=exc,
            )
        except openai.APIConnectionError as exc:
            self._fail(
                ModelUnavailableError,
                f"cannot reach {self._url} ({_root_cause(exc)}){self._tries()}",
                cause=exc,
            )
        except openai.APIStatusError as exc:
            self._status_error(exc)
        except openai.OpenAIError as exc:
            self._fail(ModelError, f"request to {self._url} failed: {exc}", cause=None)
        try:
            data = json.loads(body)
        except ValueError as exc:
            self._fail(
                ModelResponseError,
                f"{self._url} answered HTTP {response.status_code} with a body that is not "
                f"JSON: {_snippet(body)!r}",
                cause=exc,
            )
        try:
            return parse_chat_completion(data)
        except ModelResponseError as exc:
            self._fail(ModelResponseError, f"{self._url} answered {exc}", cause=None)

    def _deadline(self) -> float:
        """Seconds one call may take: each attempt's timeout and the SDK's waits between them,
        plus a second, so that a plain timeout is still reported as the SDK's."""
        attempts = self.max_retries + 1
        return attempts * self.timeout + self.max_retries * _MAX_RETRY_WAIT + 1.0

    def _tries(self) -> str:
        return f" after {self.max_retries + 1} attempts" if self.max_retries else ""

    def _status_error(self, exc: APIStatusError) -> NoReturn:
        # Not chained: the SDK error carries the server's text, which may echo the key.
        status = exc.status_code
        message = _error_message(exc)
        detail = f"HTTP {status}: {message}"
        if status in (401, 403):
            text = f"{self._url} rejected the API key: {detail}"
            self._fail(ModelConfigError, text, None, status)
        if status == 404:
            self._fail(
                ModelConfigError,
                f"{self._url} does not serve model {self.model!r} ({detail}); "
                "check the model name and the base URL",
                None,
                status,
            )
        if status in _RETRYABLE or status >= 500:
            text = f"{self._url} answered HTTP {status}{self._tries()}: {message}"
            self._fail(ModelUnavailableError, text, None, status)
        self._fail(ModelError, f"{self._url} refused the request: {detail}", None, status)

    def _fail(
        self,
        cls: type[ModelError],
        text: str,
        cause: BaseException | None,
        status: int | None = None,
    ) -> NoReturn:
        text = f"{self.name}: {text}"
        if self._key:
            text = text.replace(self._key, "[REDACTED]")
        # A proxy's credentials in the base URL (http://user:password@host): the URL is shown
        # masked, and the password taken out of what else may quote it.
        text = masked_in(text, self._url)
        raise cls(text, status_code=status) from cause

    async def aclose(self) -> None:
        """Close the HTTP client, if one is open; safe to call more than once."""
        client, self._client = self._client, None
        self._key = ""
        if client is not None:
            await client.close()

    async def __aenter__(self) -> OpenAIModel:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


def parse_chat_completion(data: Any) -> ModelReply:
    """A decoded chat.completion body as a ``ModelReply``; ``ModelResponseError`` if malformed."""
    if not isinstance(data, dict):
        raise ModelResponseError(f"a JSON {type(data).__name__}, not a chat completion object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ModelResponseError("a chat completion without choices")
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise ModelResponseError("a chat completion whose choices[0] has no message")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise ModelResponseError("a message whose content is not a string")
    wire_calls = message.get("tool_calls")
    if wire_calls is None:
        wire_calls = []
    if not isinstance(wire_calls, list):
        raise ModelResponseError("a message whose tool_calls is not a list")
    calls = [_parse_tool_call(i, wire) for i, wire in enumerate(wire_calls)]
    if content is None and not calls:
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:  # the model declined: that is its answer
            content = refusal
        elif choices[0].get("finish_reason") == "length":
            raise ModelResponseError(
                "an answer cut off at the model's token limit before any text or tool call"
            )
    return ModelReply(content=content, tool_calls=calls, raw=data)


def _parse_tool_call(index: int, wire: Any) -> ToolCall:
    where = f"tool_calls[{index}]"
    if not isinstance(wire, dict):
        raise ModelResponseError(f"a message whose {where} is not an object")
    if wire.get("type", "function") != "function":
        raise ModelResponseError(f"a message whose {where} has unsupported type {wire['type']!r}")
    function = wire.get("function")
    call_id = wire.get("id")
    if not isinstance(function, dict) or not isinstance(call_id, str):
        raise ModelResponseError(f"a message whose {where} lacks an id or a function")
    name = function.get("name")
    arguments = function.get("arguments", "{}")
    if isinstance(arguments, dict):  # some compatible servers send an object, not JSON text
        arguments = json.dumps(arguments)
    if not isinstance(name, str) or not isinstance(arguments, str):
        raise ModelResponseError(f"a message whose {where} lacks a function name or arguments")
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _error_message(exc: APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        # The SDK hands over the "error" object of an OpenAI-style body, or the whole body.
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else None
        if isinstance(message, str) and message:
            return message[:_SNIPPET]
    text = exc.response.text.strip()
    return _snippet(text.encode()) if text else exc.response.reason_phrase or "no details"


def _is_loopback(url: str) -> bool:
    """Whether ``url`` names this machine (a loopback address or ``localhost``)."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _snippet(body: bytes) -> str:
    text = body.decode("utf-8", "replace")
    return text if len(text) <= _SNIPPET else text[:_SNIPPET] + "..."


def _root_cause(exc: BaseException) -> str:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


OpenAIModel.__module__ = "tether.models"
