"""Review of the hook engine: a refusal always says why.

A command hook answering ``{"block": true}`` without a reason already gets one
(``NO_REASON``); a callback raising ``HookBlocked()`` gets one naming it, so a dead letter, a
dry run's decision or a run record never carries an empty reason.
"""

from __future__ import annotations

import pytest

from tether import HookBlocked, HookContext, HookEvent, HookManager
from tether.hooks._history import HistoryRecorder

CREATED = HookEvent.TASK_CREATED
TASK = {"event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}


@pytest.mark.parametrize("raised", [HookBlocked(), HookBlocked("")])
async def test_a_block_without_a_reason_says_which_hook_refused(raised: HookBlocked) -> None:
    manager = HookManager()
    manager.recorder = history = HistoryRecorder("p")

    async def refuse(ctx: HookContext) -> None:
        raise raised

    manager.register(CREATED, refuse, name="policy")
    result = await manager.dispatch(CREATED, TASK)

    assert result.blocked
    assert result.reason == "blocked by hook 'policy' (it gave no reason)"
    ((run),) = history.runs()
    assert (run.outcome, run.error) == ("blocked", result.reason)


async def test_a_block_with_a_reason_keeps_it_word_for_word() -> None:
    manager = HookManager()

    async def refuse(ctx: HookContext) -> None:
        raise HookBlocked("  legacy-cron was retired\n")

    manager.register(CREATED, refuse, name="policy")
    result = await manager.dispatch(CREATED, TASK)
    assert result.reason == "  legacy-cron was retired\n"
