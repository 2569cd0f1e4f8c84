"""What the executors of one manager hold open (an HTTP connection pool, co-processes), closed
with the manager: ``await manager.aclose()``, which a process does when it stops for good."""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["close_resources", "on_close", "redactor_of"]

logger = logging.getLogger("tether.hooks")

Closer = Callable[[], Awaitable[Any]]
_CLOSERS: weakref.WeakKeyDictionary[object, list[Closer]] = weakref.WeakKeyDictionary()


def on_close(manager: object, closer: Closer) -> None:
    """Call ``closer()`` (and await it) when ``manager``'s resources are closed."""
    closers = _CLOSERS.setdefault(manager, [])
    if closer not in closers:
        closers.append(closer)


async def close_resources(manager: object) -> None:
    """Close what ``manager``'s executors hold open, every one even when another fails (a
    failure is logged). They stay usable: a later event opens them again."""
    for closer in list(_CLOSERS.get(manager, ())):
        try:
            await closer()
        except Exception as exc:
            logger.warning("closing a hook resource failed: %s: %s", type(exc).__name__, exc)


def redactor_of(manager: Any) -> Callable[[str], str]:
    """``manager.redact`` looked up at each call (a process sets it after registration),
    holding the manager weakly: an executor kept here for closing must not keep it alive."""
    ref = weakref.ref(manager)

    def redact(text: str) -> str:
        found = ref()
        return found.redact(text) if found is not None and found.redact is not None else text

    return redact
