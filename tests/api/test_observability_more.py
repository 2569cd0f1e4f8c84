"""Review of issue 5 (hook observability), round 2: what a user of the control API and the
``tether hooks`` commands tries, over real HTTP, real command hooks and the real CLI."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from _api_support import wait_for_runs
from _cli_support import cli_in_thread
from tether import AgentRuntime, HookManager, OrchestrationAPI

NOTIFY = [{"event": "task_completed", "command": ["true"], "name": "notify", "tag": "audit"}]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """Run ``tether ARGS...`` in this process (in a thread: the API serves in the loop)."""
    return cli_in_thread(capsys, monkeypatch)


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
    from tether import HookContext, HookEvent

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

    from tether import HookContext, HookEvent

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
