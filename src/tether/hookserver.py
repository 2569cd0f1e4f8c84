"""Write a persistent hook in Python: ``@serve`` a function that takes one event.

::

    #!/usr/bin/env python3
    from tether.hookserver import Block, serve

    @serve
    def handle(event):
        prompt = event["data"].get("prompt", "")
        if "password" in prompt.lower():
            raise Block("prompts may not ask for passwords")
        return {"data": {**event["data"], "prompt": prompt + "\\n\\nAnswer briefly."}}

Declared with ``HookConfig(event=..., command=["/path/to/hook.py"], persistent=True)``, the
script starts once and answers every event over JSON lines (see ``tether.hooks._persistent``).

``event`` is the envelope a command hook gets on stdin (``event``, ``process_id``,
``timestamp``, ``data``, ``metadata``). The function returns ``None`` (allow, nothing changed)
or an answer dict with the command-hook keys (``block``, ``reason``, ``data``, ``log``);
raising :class:`Block` refuses the event; any other exception is that event's hook error (its
traceback goes to stderr). An ``async def`` handler may run several events at once; a plain
function answers them one after another.

In a script run directly, ``@serve`` serves until stdin closes (the hook is stopped); in a
module imported elsewhere (a test), it only returns the function. ``print()`` inside the
handler goes to stderr, so it cannot break the protocol.

This module uses only the standard library; with ``import tether``'s light core (no pydantic,
httpx or model SDK) a hook starts fast.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import IO, Any, TypeVar

from .errors import TetherError

__all__ = ["Block", "answer", "run", "serve"]

Handler = Callable[[dict[str, Any]], Any]
H = TypeVar("H", bound=Handler)


class Block(TetherError):
    """Raised by a handler to refuse the event, with a reason."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


def answer(handler: Handler, request: dict[str, Any]) -> dict[str, Any]:
    """The answer line (as a dict) of a plain ``handler`` to one request."""
    rid = request.get("id")
    try:
        return _answer_of(rid, handler(_event_of(request)))
    except Block as exc:
        return {"id": rid, "block": True, "reason": exc.reason}
    except Exception as exc:
        return _error_of(rid, exc)


async def _answer_async(
    handler: Callable[[dict[str, Any]], Awaitable[Any]], request: dict[str, Any]
) -> dict[str, Any]:
    rid = request.get("id")
    try:
        return _answer_of(rid, await handler(_event_of(request)))
    except Block as exc:
        return {"id": rid, "block": True, "reason": exc.reason}
    except Exception as exc:
        return _error_of(rid, exc)


def _event_of(request: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in request.items() if k != "id"}


def _answer_of(rid: Any, result: Any) -> dict[str, Any]:
    if result is None:
        return {"id": rid}
    if not isinstance(result, dict):
        raise TypeError(
            f"a hook handler returns None or an answer dict (block, reason, data, log), "
            f"got {type(result).__name__}"
        )
    return {**result, "id": rid}


def _error_of(rid: Any, exc: Exception) -> dict[str, Any]:
    traceback.print_exception(exc, file=sys.stderr)
    sys.stderr.flush()
    return {"id": rid, "error": f"{type(exc).__name__}: {exc}"}


def _request_of(line: bytes) -> dict[str, Any] | None:
    """A request line decoded; one that is not a JSON object with an id is reported (None)."""
    if not line.strip():
        return None
    try:
        request = json.loads(line)
    except ValueError:
        request = None
    if not isinstance(request, dict) or "id" not in request:
        print(f"hookserver: skipped a line that is not a request: {line[:200]!r}", file=sys.stderr)
        return None
    return request


def run(handler: Handler, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> None:
    """Serve ``handler`` over JSON lines until ``stdin`` (a pipe) closes.

    By default this process's stdin and stdout are used; stdout is then kept for answers only
    (file descriptor 1 and ``sys.stdout`` are pointed at stderr, so a print() or a library
    writing to stdout cannot break the protocol).
    """
    if stdin is None:
        stdin = sys.stdin.buffer
    if stdout is None:
        sys.stdout.flush()
        stdout = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    out = stdout

    def send(reply: dict[str, Any]) -> None:
        out.write(json.dumps(reply, default=str).encode("utf-8") + b"\n")
        out.flush()

    if not inspect.iscoroutinefunction(handler):
        for line in stdin:
            request = _request_of(line)
            if request is not None:
                send(answer(handler, request))
        return
    asyncio.run(_serve_async(handler, stdin, send))


async def _serve_async(
    handler: Any, stdin: IO[bytes], send: Callable[[dict[str, Any]], None]
) -> None:
    """Read requests as they come and answer each in a task of its own."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**24, loop=loop)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader, loop=loop), stdin
    )
    running: set[asyncio.Task[None]] = set()

    async def one(request: dict[str, Any]) -> None:
        send(await _answer_async(handler, request))

    try:
        while line := await reader.readline():
            request = _request_of(line)
            if request is not None:
                task = asyncio.create_task(one(request))
                running.add(task)
                task.add_done_callback(running.discard)
        if running:
            await asyncio.gather(*running)
    finally:
        transport.close()


def serve(handler: H) -> H:
    """Decorator: in a script run directly, serve ``handler`` until stdin closes; anywhere
    else, return it unchanged (so it can be imported and tested)."""
    if getattr(handler, "__module__", None) == "__main__":
        run(handler)
    return handler
