"""Issue 5 and reference 004 over real HTTP: every run outcome read back through the API,
history that outlives its runtime, and the reference's names where the issue is silent
(sync_eligible and sync_only, required, timeout_ms, metadata, a run's process)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from _api_support import runs_of, wait_for_runs
from tether import (
    AgentRuntime,
    HookBlocked,
    HookContext,
    HookEvent,
    HookManager,
    OrchestrationAPI,
    TriggerEvent,
)
from tether.hooks._background import QUEUE_SIZE
from tether.hooks._records import OUTCOMES

UPS = HookEvent.USER_PROMPT_SUBMIT
SCRIPTED: dict[str, Any] = {"model": "scripted", "instructions": "You triage support tickets."}


async def until(condition: Callable[[], object], timeout: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "gave up waiting"
        await asyncio.sleep(0.005)


async def create(client: httpx.AsyncClient, name: str, **config: Any) -> None:
    r = await client.post("/processes", json={"name": name, "config": {**SCRIPTED, **config}})
    assert r.status_code == 201, r.text


async def inject(client: httpx.AsyncClient, name: str, trigger_id: str = "api") -> None:
    body = {"payload": {"ticket": "Login is down"}, "trigger_id": trigger_id}
    r = await client.post(f"/processes/{name}/inject", json=body)
    assert r.status_code == 202, r.text


async def appends_please(ctx: HookContext) -> None:
    ctx.set("prompt", ctx.data["prompt"] + " Please.")


async def reads_only(ctx: HookContext) -> None:
    assert ctx.data["prompt"]


async def crashes(ctx: HookContext) -> None:
    raise RuntimeError("the audit log is full")


async def hangs(ctx: HookContext) -> None:
    await asyncio.Event().wait()


async def refuses(ctx: HookContext) -> None:
    raise HookBlocked("no printer tickets")


# -- every outcome, read back over HTTP ------------------------------------------------------------


async def test_each_sync_outcome_of_real_dispatches_is_read_back_over_http(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    await create(client, "triage")
    process = runtime.get("triage")
    assert process is not None
    process.hooks.register(UPS, appends_please, name="polite", priority=50)
    process.hooks.register(UPS, reads_only, name="audit", priority=40)
    process.hooks.register(UPS, crashes, name="crash", priority=30)
    process.hooks.register(UPS, hangs, name="hang", priority=20, timeout=0.05)
    process.hooks.register(
        UPS, refuses, name="printers", priority=10, matcher={"trigger_id": "printers"}
    )
    await inject(client, "triage", trigger_id="helpdesk")
    await inject(client, "triage", trigger_id="printers")
    await wait_for_runs(client, "triage", 10)

    expected = {
        "applied": "polite",
        "passed": "audit",
        "failed": "crash",
        "timed_out": "hang",
        "skipped": "printers",
        "blocked": "printers",
    }
    for outcome, hook in expected.items():
        runs = await runs_of(client, "triage", outcome=outcome)
        assert [r["hook_name"] for r in runs] == [hook] * len(runs), outcome
        assert runs, f"no {outcome} run was read back"
    [failed] = await runs_of(client, "triage", outcome="failed", last=1)
    assert failed["error"] == "the audit log is full"
    [skipped] = await runs_of(client, "triage", outcome="skipped")
    assert (skipped["duration_ms"], skipped["error"]) == (0.0, None)


async def test_dropped_async_runs_of_a_full_queue_are_read_back_over_http(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    gate = asyncio.Event()

    async def slow(ctx: HookContext) -> None:
        await gate.wait()

    await create(client, "flood", max_queue_size=QUEUE_SIZE + 100)
    process = runtime.get("flood")
    assert process is not None
    process.hooks.register(HookEvent.TASK_CREATED, slow, mode="async", name="slow")
    try:
        for n in range(QUEUE_SIZE + 3):
            await process.inject(TriggerEvent("desk", "manual", {"n": n}))
        dropped = await runs_of(client, "flood", outcome="dropped")
    finally:
        gate.set()
    assert len(dropped) == 3
    assert {(r["hook_name"], r["mode"], r["event"]) for r in dropped} == {
        ("slow", "async", "task_created")
    }
    assert all("full" in r["error"] for r in dropped)


def test_the_outcomes_are_exactly_the_seven_the_issue_names() -> None:
    assert set(OUTCOMES) == {
        "applied",
        "passed",
        "blocked",
        "failed",
        "timed_out",
        "skipped",
        "dropped",
    }


# -- since ---------------------------------------------------------------------------------------


async def test_since_with_an_offset_whose_plus_the_url_decoded_as_a_space_is_that_offset(
    client: httpx.AsyncClient,
) -> None:
    """Regression: ``?since=2026-01-01T10:00:00+01:00`` written raw in a URL reaches the
    server as ``...T10:00:00 01:00`` and was refused as not ISO 8601."""
    await create(client, "triage", hooks=[{"event": "task_completed", "command": ["true"]}])
    await inject(client, "triage")
    [run] = await wait_for_runs(client, "triage", 1)
    recorded = datetime.fromisoformat(run["recorded_at"])
    plus_two = timezone(timedelta(hours=2))
    before = (recorded - timedelta(minutes=5)).astimezone(plus_two).isoformat()
    after = (recorded + timedelta(minutes=5)).astimezone(plus_two).isoformat()
    assert "+02:00" in before
    for since, count in ((before, 1), (after, 0)):
        r = await client.get(f"/processes/triage/hooks/runs?since={since}")
        assert r.status_code == 200, r.text
        assert len(r.json()["runs"]) == count


async def test_a_space_separated_since_without_an_offset_is_still_utc(
    client: httpx.AsyncClient,
) -> None:
    await create(client, "triage", hooks=[{"event": "task_completed", "command": ["true"]}])
    await inject(client, "triage")
    await wait_for_runs(client, "triage", 1)
    hour_ago = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%d %H:%M")
    assert len(await runs_of(client, "triage", since=hour_ago)) == 1


# -- the reference's names -------------------------------------------------------------------------


async def test_every_event_is_sync_eligible_and_sync_only_keeps_them_all(
    client: httpx.AsyncClient,
) -> None:
    everything = (await client.get("/hooks/events")).json()["events"]
    assert len(everything) == 15
    assert all(e["sync_eligible"] is True for e in everything)
    for value in ("true", "false"):
        r = await client.get("/hooks/events", params={"sync_only": value})
        assert r.status_code == 200, r.text
        assert r.json()["events"] == everything
    r = await client.get("/hooks/events", params={"sync_only": "true", "blockable": "true"})
    assert {e["event"] for e in r.json()["events"]} == {
        e["event"] for e in everything if e["blockable"]
    }


async def test_a_catalog_entry_says_required_and_timeout_ms_as_the_reference_names_them(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    hooks = [
        {"event": "task_created", "command": ["true"], "fail_closed": True, "timeout": 2.5},
        {"event": "task_completed", "command": ["true"], "mode": "async", "tag": "notify"},
    ]
    await create(client, "triage", hooks=hooks)
    process = runtime.get("triage")
    assert process is not None

    class Acme:
        name = "acme"  # the catalog names an owner by its name (a plugin's)

    process.hooks.register(UPS, reads_only, name="audit", owner=Acme())
    r = await client.get("/hooks/catalog", params={"process": "triage"})
    entries = {h["event"]: h for h in r.json()["hooks"]}
    gate, notify, audit = (
        entries["task_created"],
        entries["task_completed"],
        entries["user_prompt_submit"],
    )
    assert (gate["required"], gate["timeout_ms"], gate["metadata"]) == (True, 2500, {})
    assert (notify["required"], notify["timeout_ms"]) == (False, 5000)
    assert notify["metadata"] == {"tag": "notify"}
    assert (audit["timeout_ms"], audit["metadata"]) == (30000, {"owner": "acme"})


async def test_a_run_names_its_process_as_the_catalog_does(client: httpx.AsyncClient) -> None:
    await create(client, "billing", hooks=[{"event": "task_completed", "command": ["true"]}])
    await inject(client, "billing")
    [run] = await wait_for_runs(client, "billing", 1)
    catalog = (await client.get("/hooks/catalog")).json()["hooks"]
    assert run["process"] == catalog[0]["process"] == "billing"


# -- history outlives the runtime ------------------------------------------------------------------


async def _life(journal: Path, *, inject_one: bool) -> list[dict[str, Any]]:
    """Start a runtime and its API, create the process on ``journal``, maybe inject; answer the
    runs the API reads, then stop everything."""
    runtime = AgentRuntime(hooks=HookManager())
    await runtime.start_all()
    api = OrchestrationAPI(runtime, port=0, webhooks=False, allow_command_deploys=True)
    await api.start()
    try:
        async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            hooks = [{"event": "task_completed", "command": ["true"], "name": "notify"}]
            await create(client, "triage", journal_path=str(journal), hooks=hooks)
            if not inject_one:
                return await runs_of(client, "triage")
            await inject(client, "triage")
            return await wait_for_runs(client, "triage", 1)
    finally:
        await api.stop()
        await runtime.stop_all()


async def test_runs_stored_in_sqlite_are_read_over_http_after_the_runtime_restarts(
    tmp_path: Path,
) -> None:
    journal = tmp_path / "tether.db"
    [first] = await _life(journal, inject_one=True)
    [again] = await _life(journal, inject_one=False)
    keys = ("hook_name", "event", "outcome", "source", "mode", "dispatch_id", "recorded_at")
    assert [again[k] for k in keys] == [first[k] for k in keys]
    assert (again["hook_name"], again["outcome"]) == ("notify", "passed")


# -- dry runs --------------------------------------------------------------------------------------


async def test_a_dry_run_answers_its_decision_in_words_and_names_the_process_in_its_trace(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    await create(client, "triage")
    process = runtime.get("triage")
    assert process is not None
    process.hooks.register(UPS, reads_only, name="audit", priority=10)
    process.hooks.register(
        UPS, refuses, name="printers", matcher={"trigger_id": "printers"}, fail_closed=True
    )
    sample = {"prompt": "Jammed", "event_id": "e1", "trigger_type": "manual"}
    answers = {}
    for trigger_id in ("helpdesk", "printers"):
        body = {"event": "user_prompt_submit", "data": {**sample, "trigger_id": trigger_id}}
        r = await client.post("/processes/triage/hooks/dry-run", json=body)
        assert r.status_code == 200, r.text
        answers[trigger_id] = r.json()
    allowed, blocked = answers["helpdesk"], answers["printers"]
    assert (allowed["decision"], allowed["blocked"], allowed["reason"]) == ("allowed", False, None)
    assert (blocked["decision"], blocked["blocked"]) == ("blocked", True)
    assert blocked["reason"] == "no printer tickets"
    assert [(t["hook_name"], t["outcome"]) for t in allowed["trace"]] == [
        ("audit", "passed"),
        ("printers", "skipped"),
    ]
    assert {t["process"] for t in blocked["trace"]} == {"triage"}
    assert await runs_of(client, "triage") == []  # a dry run leaves no history


# -- last ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("last", ["2147483648", "100000000000000000000000", "1_000", "+3", "٣"])
async def test_a_last_that_is_not_a_plain_int32_count_answers_400_even_with_sqlite_history(
    client: httpx.AsyncClient, tmp_path: Path, last: str
) -> None:
    """Regression: a count past SQLite's 64-bit integers answered 500 from a journaled
    process."""
    await create(client, "triage", journal_path=str(tmp_path / "tether.db"))
    r = await client.get("/processes/triage/hooks/runs", params={"last": last})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "INVALID_QUERY"
    assert error["message"].startswith("last: ")
    assert "at most 2147483647" in error["message"]


async def test_the_largest_last_reads_every_run_of_a_journaled_process(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    hooks = [{"event": "task_completed", "command": ["true"]}]
    await create(client, "triage", journal_path=str(tmp_path / "tether.db"), hooks=hooks)
    await inject(client, "triage")
    [run] = await wait_for_runs(client, "triage", 1)
    assert await runs_of(client, "triage", last="2147483647") == [run]


def test_a_store_query_for_more_runs_than_sqlite_can_count_reads_them_all(
    tmp_path: Path,
) -> None:
    """Regression: HistoryStore.query(last=N) past 2**63 - 1 raised OverflowError."""
    from tether.hooks import HookRun
    from tether.store import HistoryStore

    store = HistoryStore(tmp_path / "tether.db")
    run = HookRun(
        1.0, "hook-1", "notify", "task_completed", "p", "config", "sync", "passed", 1.0, None,
        False, "d-1", 0,
    )  # fmt: skip
    store.write([run])
    assert [r.hook_name for r in store.query("p", last=10**30)] == ["notify"]


async def test_the_openapi_document_lists_sync_only_and_the_bounds_of_last(
    client: httpx.AsyncClient,
) -> None:
    doc = (await client.get("/openapi.json")).json()
    paths = doc["paths"]
    events = {p["name"]: p for p in paths["/api/v1/hooks/events"]["get"]["parameters"]}
    assert events["sync_only"]["schema"] == {"type": "boolean"}
    runs_op = paths["/api/v1/processes/{name}/hooks/runs"]["get"]
    runs = {p["name"]: p for p in runs_op["parameters"]}
    assert (runs["last"]["schema"]["minimum"], runs["last"]["schema"]["maximum"]) == (0, 2**31 - 1)
