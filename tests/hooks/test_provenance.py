"""Rewrite provenance: each run record keeps which keys its hook changed, with the value before
and after, redacted like the rest of the record, in memory and in the store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tether import HookContext, HookEvent, HookManager
from tether.hooks._background import drain
from tether.hooks._history import HistoryRecorder
from tether.store import HistoryStore

UPS = HookEvent.USER_PROMPT_SUBMIT
PERM = HookEvent.PERMISSION_REQUEST
DATA = {"prompt": "hello", "event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}


def recorded(**options: Any) -> tuple[HookManager, HistoryRecorder]:
    manager = HookManager()
    manager.recorder = history = HistoryRecorder("p", **options)
    return manager, history


async def test_a_rewrite_is_kept_with_its_value_before_and_after() -> None:
    manager, history = recorded()

    async def reads(ctx: HookContext) -> None:
        assert ctx.data["prompt"]

    async def shouts(ctx: HookContext) -> None:
        ctx.data["prompt"] = ctx.data["prompt"].upper()
        ctx.data["tag"] = "loud"
        del ctx.data["trigger_id"]

    manager.register(UPS, reads, name="reads", priority=1)
    manager.register(UPS, shouts, name="shouts")
    await manager.dispatch(UPS, DATA)
    first, second = history.runs()
    assert (first.hook_name, first.changes) == ("reads", None)
    assert second.changes == {
        "prompt": {"before": "hello", "after": "HELLO"},
        "tag": {"after": "loud"},  # added: nothing before
        "trigger_id": {"before": "desk"},  # removed: nothing after
    }
    assert second.as_dict()["changes"] == second.changes


async def test_a_nested_write_shows_the_whole_value_and_is_a_copy() -> None:
    manager, history = recorded()
    kept: list[dict[str, Any]] = []

    async def caps(ctx: HookContext) -> None:
        ctx.data["arguments"]["amount"] = 50
        kept.append(ctx.data["arguments"])

    manager.register(PERM, caps, name="caps")
    await manager.dispatch(PERM, {"tool_name": "refund", "arguments": {"amount": 120}})
    kept[0]["amount"] = -1  # what the hook kept of the data cannot change the record
    (run,) = history.runs()
    assert run.changes == {"arguments": {"before": {"amount": 120}, "after": {"amount": 50}}}


async def test_the_values_are_redacted() -> None:
    manager, history = recorded(redact=lambda text: text.replace("s3cr3t", "[REDACTED]"))

    async def leaks(ctx: HookContext) -> None:
        ctx.data["prompt"] = "token s3cr3t"

    manager.register(UPS, leaks, name="leaks")
    await manager.dispatch(UPS, DATA)
    (run,) = history.runs()
    assert run.changes == {"prompt": {"before": "hello", "after": "token [REDACTED]"}}


async def test_an_async_hooks_changes_are_kept_too() -> None:
    manager, history = recorded()

    async def notes(ctx: HookContext) -> None:
        ctx.data["audited"] = True

    manager.register(HookEvent.TASK_CREATED, notes, name="notes", mode="async")
    await manager.dispatch(HookEvent.TASK_CREATED, {"event_id": "e1"})
    assert await drain(5.0, manager)
    (run,) = history.runs()
    assert (run.outcome, run.changes) == ("applied", {"audited": {"after": True}})


async def test_changes_are_stored_and_read_back(tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "tether.db")
    manager = HookManager()
    manager.recorder = history = HistoryRecorder("p", sink=store.write)

    async def rewrites(ctx: HookContext) -> None:
        ctx.data["prompt"] = "rewritten"

    async def reads(ctx: HookContext) -> None:
        return None

    manager.register(UPS, rewrites, name="rewrites", priority=1)
    manager.register(UPS, reads, name="reads")
    await manager.dispatch(UPS, DATA)
    history.flush()
    rewritten, read = store.query("p")
    assert rewritten.changes == {"prompt": {"before": "hello", "after": "rewritten"}}
    assert read.changes is None
    assert (rewritten.required, rewritten.patch_applied) == (False, True)
