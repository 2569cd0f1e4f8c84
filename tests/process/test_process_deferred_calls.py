"""A process's deferred extension-point calls (call_later) end with it, not after it."""

from __future__ import annotations

import asyncio

import pytest

from tether import AgentProcess, ProcessConfig
from tether.models import ScriptedModel

NAME = "audit.later"


def process() -> AgentProcess:
    return AgentProcess("deferring", ProcessConfig(model=ScriptedModel(reply="ok")))


@pytest.mark.slow
async def test_a_deferred_call_pending_at_stop_never_fires() -> None:
    proc = process()
    fired: list[str] = []

    async def handler(text: str) -> None:
        fired.append(text)

    proc.hooks.register(NAME, handler)
    await proc.start()
    proc.hooks.call_later(1.0, NAME, text="after stop")  # far beyond a stop's few ms
    await proc.stop()
    await asyncio.sleep(1.3)  # past the delay: it would have fired by now
    assert fired == []


async def test_a_deferred_call_running_at_stop_is_cancelled() -> None:
    proc = process()
    started = asyncio.Event()
    outcome: list[str] = []

    async def handler() -> None:
        started.set()
        try:
            await asyncio.sleep(30)
            outcome.append("finished")
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise

    proc.hooks.register(NAME, handler)
    await proc.start()
    proc.hooks.call_later(0, NAME)
    await asyncio.wait_for(started.wait(), timeout=5)
    await proc.stop()
    assert outcome == ["cancelled"]


async def test_a_deferred_call_that_stops_its_process_is_not_cancelled_by_that_stop() -> None:
    proc = process()
    done = asyncio.Event()

    async def handler() -> None:
        await proc.stop()
        done.set()  # reached: the stop it awaited did not cancel it

    proc.hooks.register(NAME, handler)
    await proc.start()
    proc.hooks.call_later(0, NAME)
    await asyncio.wait_for(done.wait(), timeout=5)
    assert proc.state.value == "stopped"
