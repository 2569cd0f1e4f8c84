"""Hooks that mishandle the cancellation of their timeout, as careless real hooks do, and a
body for one that waits to be cancelled."""

from __future__ import annotations

import asyncio

from tether.hooks import HookContext


async def swallows_its_cancellation(ctx: HookContext) -> None:
    """A hook that catches its cancellation and returns as if nothing happened."""
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        return


async def wraps_its_cancellation(ctx: HookContext) -> None:
    """A hook whose client library turns a cancellation into an error of its own."""
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError as exc:
        raise RuntimeError("request aborted") from exc


async def sleep_until_cancelled(started: asyncio.Event, cancelled: list[bool]) -> None:
    """Set ``started`` and sleep until cancelled; note the cancellation in ``cancelled`` and let
    it through."""
    started.set()
    try:
        await asyncio.sleep(10)
    except asyncio.CancelledError:
        cancelled.append(True)
        raise
