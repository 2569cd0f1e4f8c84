"""Issue 5 and reference 004 over real HTTP: every run outcome read back through the API,
history that outlives its runtime, and the reference's names where the issue is silent
(sync_eligible and sync_only, required, timeout_ms, metadata, a run's process); then what a user
of the control API and the ``tether hooks`` commands tries, over real HTTP, real command hooks
and the real CLI."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from _api_support import runs_of, wait_for_runs
from tether import AgentProcess, AgentRuntime, OrchestrationAPI, TriggerEvent
from tether.hooks import HookBlocked, HookContext, HookEvent, HookManager
from tether.hooks._background import QUEUE_SIZE
from tether.hooks._records import OUTCOMES

UPS = HookEvent.USER_PROMPT_SUBMIT
SCRIPTED: dict[str, Any] = {"model": "scripted", "instructions": "You triage support tickets."}


async def create(client: httpx.AsyncClient, name: str, **config: Any) -> None:
    r = await client.post("/processes", json={"name": name, "config": {**SCRIPTED, **config}})
    assert r.status_code == 201, r.text


async def created(client: httpx.AsyncClient, runtime: AgentRuntime) -> AgentProcess:
    """The process "triage", created over HTTP, with the triggers "helpdesk" and "printers"."""
    triggers = [{"type": "event", "id": n, "event_type": n} for n in ("helpdesk", "printers")]
    await create(client, "triage", triggers=triggers)
    process = runtime.get("triage")
    assert process is not None
    return process


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
    process = await created(client, runtime)
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


AFTER_THE_FACT = {
    "session_end",
    "permission_denied",
    "subagent_stop",
    "pre_compact",
    "post_compact",
    "task_completed",
}


async def test_sync_only_narrows_to_the_events_whose_hooks_can_change_something(
    client: httpx.AsyncClient,
) -> None:
    """Regression: every event said sync_eligible: true, so sync_only=true narrowed nothing;
    the events that report what happened (no block, nothing read back) are async-only."""
    everything = (await client.get("/hooks/events")).json()["events"]
    assert len(everything) == 18
    async_only = {e["event"] for e in everything if not e["sync_eligible"]}
    assert async_only == AFTER_THE_FACT
    for e in everything:
        assert e["sync_eligible"] == (e["blockable"] or bool(e["patch_schema"].get("properties")))
    for value in ("true", "True", "1", "yes", "on"):
        r = await client.get("/hooks/events", params={"sync_only": value})
        assert r.status_code == 200, r.text
        assert {e["event"] for e in r.json()["events"]} == {
            e["event"] for e in everything
        } - AFTER_THE_FACT
    for value in ("false", "0", "no", "off"):
        r = await client.get("/hooks/events", params={"sync_only": value})
        assert r.json()["events"] == everything
    r = await client.get("/hooks/events", params={"sync_only": "maybe"})
    assert r.status_code == 400
    assert "allowed: true, 1, yes, on, false, 0, no, off" in r.text
    r = await client.get("/hooks/events", params={"sync_only": "true", "blockable": "true"})
    assert {e["event"] for e in r.json()["events"]} == {
        e["event"] for e in everything if e["blockable"]
    }


async def test_the_runs_endpoint_takes_document_004_s_outcome_names(
    client: httpx.AsyncClient, runtime: AgentRuntime
) -> None:
    process = await created(client, runtime)
    process.hooks.register(UPS, appends_please, name="polite", priority=50)
    process.hooks.register(UPS, crashes, name="crash", priority=30)
    process.hooks.register(
        UPS, refuses, name="printers", priority=10, matcher={"trigger_id": "printers"}
    )
    await inject(client, "triage", trigger_id="printers")
    await wait_for_runs(client, "triage", 3)
    by = {}
    for name in ("applied", "denied", "failed", "rejected", "skipped", "dropped"):
        r = await client.get("/processes/triage/hooks/runs", params={"outcome": name})
        assert r.status_code == 200, r.text
        by[name] = [(run["hook_name"], run["outcome"]) for run in r.json()["runs"]]
    assert by["applied"] == [("polite", "applied")]
    assert by["denied"] == [("printers", "blocked")]
    assert by["failed"] == by["rejected"] == [("crash", "failed")]
    assert by["skipped"] == by["dropped"] == []


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
    process = await created(client, runtime)
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


# -- what a user of the API and of 'tether hooks' tries (CLI, declarations, filters, order) ----


NOTIFY = [{"event": "task_completed", "command": ["true"], "name": "notify", "tag": "audit"}]


@pytest.fixture
async def served() -> AsyncIterator[OrchestrationAPI]:
    """A runtime with a process ``triage`` whose task_completed runs a command hook."""
    runtime = AgentRuntime(hooks=HookManager())
    await runtime.start_all()
    await runtime.add_process("triage", {"model": "scripted", "hooks": NOTIFY})
    api = OrchestrationAPI(runtime, port=0, webhooks=False)
    await api.start()
    yield api
    await api.stop()
    await runtime.stop_all()


async def _inject(api: OrchestrationAPI, count: int) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
        for i in range(count):
            body = {"payload": {"ticket": f"ticket {i}"}}
            r = await client.post("/processes/triage/inject", json=body)
            assert r.status_code == 202, r.text
        return await wait_for_runs(client, "triage", count)


# -- tether hooks runs --last N --follow -----------------------------------------------------------


@pytest.mark.parametrize("last", [0, 1])
async def test_follow_with_last_never_prints_older_runs_than_the_last_asked_for(
    cli: Any, served: OrchestrationAPI, last: int
) -> None:
    """Regression: ``--last 1 --follow`` printed the last run, then at the first poll every
    older run of the poll's look-back window too (``--last 0`` printed them all)."""
    runs = await _inject(served, 3)
    args = ["--last", str(last), "--follow", "--json", "--interval", "0.05", "--url", served.url]
    follow = asyncio.ensure_future(cli("hooks", "runs", "triage", *args))
    await asyncio.sleep(0.6)  # several polls
    await served.stop()
    async with asyncio.timeout(30):
        done = await follow
    assert done.returncode == 1  # the API went away
    printed = [json.loads(line) for line in done.stdout.splitlines()]
    expected = runs[len(runs) - last :] if last else []
    assert [(r["recorded_at"], r["hook_id"]) for r in printed] == [
        (r["recorded_at"], r["hook_id"]) for r in expected
    ]


# -- a declaration refused at once never shows a hook's env value ----------------------------------

CANARY = "canary-7f3a9c1e5b"


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"matcher": {"bogus": "x"}}, "matcher field 'bogus' is not available"),
        ({"matcher": {"tool_name": "refund_*"}}, "allowed: trigger_type, trigger_id"),
        ({"mode": "async", "fail_closed": True}, "cannot be fail_closed"),
        (
            {"callback": None, "command": None},
            "set exactly one of 'command', 'callback', 'url' or 'prompt'",
        ),
    ],
    ids=["unknown matcher field", "matcher field of another event", "async fail_closed", "none"],
)
def test_a_hook_config_refused_as_a_whole_does_not_show_its_env_values(
    fields: dict[str, Any], says: str
) -> None:
    """Regression: an error of the whole declaration (a matcher field the event does not offer,
    async with fail_closed) showed every field given as its input, the ``env`` values too."""
    from pydantic import ValidationError

    from tether import HookConfig

    declared: dict[str, Any] = {
        "env": {"CRM_TOKEN": CANARY},
        "event": "user_prompt_submit",
        "command": ["true"],
        **fields,
    }
    with pytest.raises(ValidationError) as refused:
        HookConfig(**declared)
    assert says in str(refused.value)
    assert CANARY[:6] not in str(refused.value)
    assert CANARY not in repr(refused.value.errors())


def test_a_hook_config_error_of_one_plain_field_still_shows_its_value() -> None:
    from pydantic import ValidationError

    from tether import HookConfig

    with pytest.raises(ValidationError) as refused:
        HookConfig(event="user_prompt_submit", command=["true"], timeout=-1, env={"T": CANARY})
    assert "input_value=-1" in str(refused.value)
    assert CANARY not in repr(refused.value.errors())


async def test_the_api_refuses_a_hook_with_an_unknown_matcher_field_naming_it_and_no_env(
    client: httpx.AsyncClient,
) -> None:
    hook = {
        "env": {"CRM_TOKEN": CANARY},
        "event": "user_prompt_submit",
        "command": ["true"],
        "matcher": {"tool_name": "refund_*"},
    }
    r = await client.post("/processes", json={"name": "triage", "config": {"hooks": [hook]}})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["message"] == (
        "config.hooks[0]: matcher field 'tool_name' is not available for user_prompt_submit; "
        "allowed: trigger_type, trigger_id"
    )
    assert CANARY not in r.text


def test_a_process_config_refused_for_two_triggers_of_one_id_does_not_show_its_secrets() -> None:
    """Regression: the check of trigger ids ran outside the wrapper hiding secret values from
    errors, so its error showed the whole configuration, ``secrets`` included."""
    from pydantic import ValidationError

    from tether import ProcessConfig

    cron = {"type": "cron", "id": "nightly", "cron_expression": "0 3 * * *"}
    with pytest.raises(ValidationError) as refused:
        ProcessConfig(secrets={"CRM_TOKEN": CANARY}, model="scripted", triggers=[cron, cron])
    assert "two triggers share the id 'nightly'" in str(refused.value)
    assert CANARY[:6] not in str(refused.value)
    assert CANARY not in repr(refused.value.errors())


# -- a dry run counts the async hooks it ran inline ------------------------------------------------


async def test_a_dry_run_counts_the_async_command_hooks_it_ran_and_their_errors(
    cli: Any, tmp_path: Any
) -> None:
    """Regression: a dry run ran the async hooks inline (the trace showed them) but answered
    ``fired: 0`` and no errors for them, so the CLI said "0 hook(s) ran"."""
    marker = tmp_path / "ran"
    hooks = [
        {"event": "task_created", "command": ["touch", str(marker)], "mode": "async"},
        {"event": "task_created", "command": ["false"], "mode": "async", "name": "audit"},
    ]
    runtime = AgentRuntime(hooks=HookManager())
    await runtime.start_all()
    await runtime.add_process("triage", {"model": "scripted", "hooks": hooks})
    api = OrchestrationAPI(runtime, port=0, webhooks=False)
    await api.start()
    try:
        async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
            body = {"event": "task_created", "data": {"task_id": "t1", "payload": {}}}
            r = await client.post("/processes/triage/hooks/dry-run", json=body)
            assert r.status_code == 200, r.text
            answer = r.json()
            assert [t["outcome"] for t in answer["trace"]] == ["passed", "failed"]
            assert answer["fired"] == 2
            [error] = answer["errors"]
            assert error["hook_id"] == answer["trace"][1]["hook_id"]
            assert "exited 1" in error["error"]
            assert marker.exists()  # the command really ran
            assert (await client.get("/processes/triage/hooks/runs")).json()["runs"] == []
        done = await cli("hooks", "dry-run", "triage", "task_created", "--url", api.url)
        assert done.returncode == 0, done.stderr
        assert "2 hook(s) ran, nothing was queued" in done.stdout
    finally:
        await api.stop()
        await runtime.stop_all()


# -- filters of the runs endpoint ------------------------------------------------------------------


@pytest.mark.parametrize("hook", ["", "   "])
async def test_an_empty_hook_filter_answers_400_naming_it(
    client: httpx.AsyncClient, hook: str
) -> None:
    """Regression: ``hook=`` answered 200 with no runs, as if the hook had never run."""
    r = await client.post(
        "/processes", json={"name": "triage", "config": {"model": "scripted", "hooks": NOTIFY}}
    )
    assert r.status_code == 201, r.text
    r = await client.get("/processes/triage/hooks/runs", params={"hook": hook})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "INVALID_QUERY"
    assert error["message"] == (f"hook: {hook!r} is empty; give a hook id (e.g. hook-3) or a name")
    assert error["details"][0]["path"] == "query.hook"


async def test_the_openapi_document_says_the_hook_filter_is_not_empty(
    client: httpx.AsyncClient,
) -> None:
    doc = (await client.get("/openapi.json")).json()
    operation = doc["paths"]["/api/v1/processes/{name}/hooks/runs"]["get"]
    [hook] = [p for p in operation["parameters"] if p["name"] == "hook"]
    assert hook["schema"] == {"type": "string", "minLength": 1, "pattern": r"\S"}


# -- the last N runs of a journaled process, in chain order ----------------------------------------


async def test_the_last_runs_of_a_journaled_process_keep_the_order_of_the_chain(
    client: httpx.AsyncClient, runtime: AgentRuntime, tmp_path: Any, monkeypatch: Any
) -> None:
    """Regression: the store sorted the last N rows by recorded_at alone, so runs sharing a
    time (a skipped hook and the one before it) came back reversed."""
    from tether import HookEvent

    async def reads(ctx: HookContext) -> None:
        assert ctx.data["trigger_id"]

    config = {"model": "scripted", "journal_path": str(tmp_path / "tether.db")}
    r = await client.post("/processes", json={"name": "triage", "config": config})
    assert r.status_code == 201, r.text
    process = runtime.get("triage")
    assert process is not None
    for i in range(6):  # every other one skipped: its matcher does not match
        matcher = {"trigger_id": "printers"} if i % 2 else None
        process.hooks.register(
            HookEvent.TASK_CREATED, reads, name=f"h{i}", priority=10 - i, matcher=matcher
        )
    # Many dispatches of a fast chain: its runs are recorded microseconds apart.
    for i in range(300):
        data = {"event_id": f"e{i}", "trigger_id": "api", "trigger_type": "api"}
        await process.hooks.dispatch(HookEvent.TASK_CREATED, data, process_id="triage")
    every = await wait_for_runs(client, "triage", 1800, event="task_created")
    chain = [f"h{i}" for i in range(6)]
    assert [run["hook_name"] for run in every[-6:]] == chain
    params = {"event": "task_created", "last": 6}
    r = await client.get("/processes/triage/hooks/runs", params=params)
    assert [run["hook_name"] for run in r.json()["runs"]] == chain


# -- since: the time a run shows finds that run ----------------------------------------------------


@pytest.mark.parametrize("journaled", [False, True], ids=["ring", "sqlite"])
async def test_since_the_time_a_run_shows_answers_that_run_and_those_after_it(
    client: httpx.AsyncClient, tmp_path: Any, journaled: bool
) -> None:
    """Regression: a run is timed finer than its recorded_at shows (rounded to the
    microsecond), so ``since`` of the time a run showed left that run out about half the time."""
    from datetime import datetime

    config: dict[str, Any] = {"model": "scripted", "hooks": NOTIFY}
    if journaled:
        config["journal_path"] = str(tmp_path / "tether.db")
    r = await client.post("/processes", json={"name": "triage", "config": config})
    assert r.status_code == 201, r.text
    for i in range(12):
        r = await client.post("/processes/triage/inject", json={"payload": {"ticket": str(i)}})
        assert r.status_code == 202, r.text
    runs = await wait_for_runs(client, "triage", 12)

    def key(run: dict[str, Any]) -> tuple[str, str]:
        return (run["dispatch_id"], run["hook_id"])

    def at(run: dict[str, Any]) -> datetime:
        return datetime.fromisoformat(run["recorded_at"])

    for run in runs:
        since = run["recorded_at"]
        expected = [key(r) for r in runs if at(r) >= at(run)]
        found = await client.get("/processes/triage/hooks/runs", params={"since": since})
        assert [key(r) for r in found.json()["runs"]] == expected, since
        params = {"since": since, "last": 2}
        found = await client.get("/processes/triage/hooks/runs", params=params)
        assert [key(r) for r in found.json()["runs"]] == expected[-2:], since


async def test_hook_runs_in_code_since_the_time_a_run_shows_answers_that_run(
    runtime: AgentRuntime,
) -> None:
    from datetime import datetime

    from tether import HookEvent

    async def reads(ctx: HookContext) -> None:
        assert ctx.data["trigger_id"]

    process = await runtime.add_process("triage", {"model": "scripted"})
    process.hooks.register(HookEvent.TASK_CREATED, reads, name="reads")
    for i in range(30):
        data = {"event_id": f"e{i}", "trigger_id": "api", "trigger_type": "api"}
        await process.hooks.dispatch(HookEvent.TASK_CREATED, data, process_id="triage")
    runs = process.hook_runs()
    assert len(runs) == 30

    def shown(run: Any) -> datetime:
        return datetime.fromisoformat(run.as_dict()["recorded_at"])

    for run in runs:
        expected = [r.dispatch_id for r in runs if shown(r) >= shown(run)]
        for since in (run.as_dict()["recorded_at"], shown(run)):
            found = process.hook_runs(since=since)
            assert [r.dispatch_id for r in found] == expected, since


# -- patch_applied when the chain ends without a prompt the process can use ----------------------

URGENT = """\
import json, sys
event = json.load(sys.stdin)
print(json.dumps({"data": {**event["data"], "prompt": "URGENT " + event["data"]["prompt"]}}))
"""
DROPS_PROMPT = """\
import json, sys
json.load(sys.stdin)
print(json.dumps({"data": {"note": "triaged"}}))  # replaces the data: no prompt left
"""


async def test_a_chain_that_leaves_no_prompt_marks_no_run_patch_applied(
    make_script: Any, tmp_path: Any
) -> None:
    from tether.models import OpenAIModel
    from tether.testing import FakeLLM

    hooks = [
        {
            "event": "user_prompt_submit",
            "command": [make_script(URGENT, "urgent.py")],
            "name": "urgent",
            "priority": 2,
        },
        {
            "event": "user_prompt_submit",
            "command": [make_script(DROPS_PROMPT, "drops.py")],
            "name": "drops",
            "priority": 1,
        },
    ]
    async with FakeLLM(port=0) as llm:
        runtime = AgentRuntime(hooks=HookManager())
        await runtime.start_all()
        model = OpenAIModel("m", base_url=llm.base_url, api_key="sk-review-0123456789")
        await runtime.add_process("triage", {"model": model, "hooks": hooks})
        api = OrchestrationAPI(runtime, port=0, webhooks=False)
        await api.start()
        try:
            async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
                body = {"payload": {"ticket": "Login is down"}}
                r = await client.post("/processes/triage/inject", json=body)
                assert r.status_code == 202, r.text
                runs = await wait_for_runs(client, "triage", 2, event="user_prompt_submit")
                async with asyncio.timeout(10):
                    while not llm.prompts:
                        await asyncio.sleep(0.01)
        finally:
            await api.stop()
            await runtime.stop_all()
    assert "URGENT" not in llm.prompts[0]  # the process kept the prompt it had
    assert [(r["hook_name"], r["outcome"]) for r in runs] == [
        ("urgent", "applied"),
        ("drops", "applied"),
    ]
    assert [r["patch_applied"] for r in runs] == [False, False]
