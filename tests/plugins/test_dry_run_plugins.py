"""Dry runs and hook plugins: a plugin sees ``ctx.dry_run``, and nothing its context offers has
an effect then: the model is not asked, no artifact is written and no warning is kept. What the
plugin would have stored is answered under ``withheld``. The model is FakeLLM, a real
OpenAI-compatible server; artifacts are real files; the API is spoken to over real HTTP."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _process_support import Recorder, eventually, ticket
from _shell_support import appending_script
from conftest import ScriptFactory
from tether import AgentProcess, AgentRuntime, OrchestrationAPI, ProcessConfig
from tether.hooks import HookConfig, HookContext, HookEvent, Plugin, PluginContext
from tether.plugins.debrief import DRY_RUN_ERROR, DebriefPlugin, debrief_prompt
from tether.testing import FakeLLM

DEBRIEF_HOOK = "plugin:debrief.on_task_completed"
ERROR_TEXT = "upstream 502: bad gateway"
SAMPLE = {
    "event_id": "sample-1",
    "trigger_id": "helpdesk",
    "trigger_type": "webhook",
    "outcome": "failed",
    "duration_ms": 12.5,
    "error": "run reached its turn limit (max_turns=1) without an answer",
}


async def lookup_order(order: str) -> str:
    """Look up an order by its number."""
    raise RuntimeError(ERROR_TEXT)


pytestmark = pytest.mark.llm(openai_env=True, reply="The lookup tool answered 502.")


def make_process(*plugins: Any, **config: Any) -> AgentProcess:
    """A process on FakeLLM whose runs fail when FakeLLM answers with a tool call (one turn,
    spent on a tool that raises)."""
    config = {
        "model": "openai:gpt-5-mini",
        "model_max_retries": 0,
        "tools": [lookup_order],
        "max_turns": 1,
        "max_retries": 0,
        **config,
    }
    return AgentProcess("triage", ProcessConfig(plugins=list(plugins), **config))


async def run_failing_task(process: AgentProcess, llm: FakeLLM) -> dict[str, Any]:
    """Run one task to its failure; answer its task_completed data, as the hooks saw it."""
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, priority=-1000)
    llm.tool_calls = [("lookup_order", {"order": "A-1"})]
    await process.inject(ticket("Order A-1 is late"))
    await eventually(lambda: rec.outcomes(), what="task_completed")
    [data] = rec.of(HookEvent.TASK_COMPLETED)
    assert data["outcome"] == "failed"
    return data


def runs_of(answer: dict[str, Any], hook_name: str) -> list[tuple[str, str | None]]:
    return [(t["outcome"], t["error"]) for t in answer["trace"] if t["hook_name"] == hook_name]


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


class Talk(Plugin):
    """Converses at task_completed without looking at ``ctx.dry_run``."""

    name = "talk"

    def __init__(self) -> None:
        self.replies: list[str] = []

    async def on_task_completed(self, ctx: PluginContext) -> None:
        self.replies.append(await ctx.converse("What went wrong?"))


# -- the debrief plugin ------------------------------------------------------------------------


async def test_a_dry_run_of_a_finished_task_asks_the_model_nothing_and_leaves_its_artifact(
    llm: FakeLLM, tmp_path: Path
) -> None:
    """Regression: a dry run of task_completed ran the debrief plugin for real: it asked the
    model about the task again and overwrote the task's debrief artifact."""
    folder = tmp_path / "artifacts"
    process = make_process("debrief", artifacts_dir=str(folder))
    async with process:
        completed = await run_failing_task(process, llm)
        path = folder / f"{completed['event_id']}.debrief.json"
        await eventually(path.exists, what="the debrief artifact")
        kept = path.read_bytes()
        asked = len(llm.requests)

        answer = await process.dry_run("task_completed", completed)

    assert asked == 2  # the run, then its debrief
    assert len(llm.requests) == asked
    assert path.read_bytes() == kept
    assert files(folder) == [path.name]
    assert runs_of(answer, DEBRIEF_HOOK) == [("passed", None)]
    assert json.loads(kept)["reply"] == "The lookup tool answered 502."


async def test_a_dry_run_writes_no_artifact_and_keeps_no_warning(
    llm: FakeLLM, tmp_path: Path
) -> None:
    """Regression: a dry run of task_completed for a sample task wrote the sample's debrief
    artifact (with the converse error) and kept a 'debrief incomplete' warning."""
    folder = tmp_path / "artifacts"
    process = make_process("debrief", artifacts_dir=str(folder))
    async with process:
        answer = await process.dry_run("task_completed", SAMPLE)

    assert files(folder) == []
    assert process.plugins.warnings == {}
    assert llm.requests == []
    assert runs_of(answer, DEBRIEF_HOOK) == [("passed", None)]


async def test_a_dry_run_answers_the_debrief_artifact_it_did_not_write(
    llm: FakeLLM, tmp_path: Path
) -> None:
    process = make_process("debrief", artifacts_dir=str(tmp_path))
    answer = await process.dry_run("task_completed", SAMPLE)

    [note] = answer["withheld"]
    payload = note.pop("payload")
    assert note == {
        "hook_name": DEBRIEF_HOOK,
        "action": "emit_artifact",
        "task_id": "sample-1",
        "artifact": "sample-1.debrief.json",
    }
    assert payload["prompt"] == debrief_prompt("failed", SAMPLE["error"])
    assert (payload["reply"], payload["error"], payload["task_id"]) == (
        None,
        DRY_RUN_ERROR,
        "sample-1",
    )
    assert json.loads(json.dumps(answer)) == answer  # JSON-ready for the API


async def test_a_dry_run_of_an_outcome_the_debrief_skips_withholds_nothing(
    llm: FakeLLM, tmp_path: Path
) -> None:
    process = make_process(DebriefPlugin(on="failed"), artifacts_dir=str(tmp_path))
    answer = await process.dry_run("task_completed", {**SAMPLE, "outcome": "success"})

    assert answer["withheld"] == []
    assert runs_of(answer, DEBRIEF_HOOK) == [("passed", None)]


# -- the plugin context ------------------------------------------------------------------------


async def test_a_withheld_artifact_is_answered_with_the_secrets_redacted(llm: FakeLLM) -> None:
    class Audit(Plugin):
        name = "audit"

        async def on_task_created(self, ctx: PluginContext) -> None:
            ctx.emit_artifact({"seen": "key canary-123"}, label="summary")

    process = make_process(Audit(), secrets={"K": "canary-123"})
    answer = await process.dry_run("task_created", {"event_id": "sample-1"})

    assert "canary-123" not in json.dumps(answer)
    [note] = answer["withheld"]
    assert (note["artifact"], note["payload"]) == (
        "sample-1.audit.summary.json",
        {"seen": "key [REDACTED:K]"},
    )
    assert process.plugins.artifacts.list("sample-1") == []


async def test_a_plugin_sees_whether_the_dispatch_is_a_dry_run(llm: FakeLLM) -> None:
    seen: list[bool] = []

    class Look(Plugin):
        name = "look"

        async def on_task_created(self, ctx: PluginContext) -> None:
            seen.append(ctx.dry_run)

    process = make_process(Look())
    await process.dry_run("task_created", {"event_id": "sample-1"})
    async with process:
        await process.inject(ticket())

    assert seen == [True, False]


async def test_converse_in_a_dry_run_fails_the_hook_and_asks_the_model_nothing(
    llm: FakeLLM,
) -> None:
    talk = Talk()
    process = make_process(talk)
    async with process:
        completed = await run_failing_task(process, llm)
        await eventually(lambda: talk.replies, what="the real converse")
        asked = len(llm.requests)

        answer = await process.dry_run("task_completed", completed)

    assert len(llm.requests) == asked
    assert talk.replies == ["The lookup tool answered 502."]
    [(outcome, error)] = runs_of(answer, "plugin:talk.on_task_completed")
    assert outcome == "failed"
    assert error is not None
    assert "converse() does not call the model in a dry run" in error
    assert process.plugins.warnings == {}


async def test_a_warning_in_a_dry_run_is_answered_and_not_kept(llm: FakeLLM) -> None:
    class Warner(Plugin):
        name = "warner"

        async def on_task_created(self, ctx: PluginContext) -> None:
            ctx.warn("the ticket names no customer")

    process = make_process(Warner())
    answer = await process.dry_run("task_created", {"event_id": "sample-1"})

    assert process.plugins.warnings == {}
    assert answer["withheld"] == [
        {
            "hook_name": "plugin:warner.on_task_created",
            "action": "warn",
            "task_id": "sample-1",
            "message": "plugin:warner: the ticket names no customer",
        }
    ]


async def test_a_plugin_failing_in_a_dry_run_leaves_no_warning_with_the_task(
    llm: FakeLLM,
) -> None:
    class Broken(Plugin):
        name = "broken"

        async def on_task_created(self, ctx: PluginContext) -> None:
            raise RuntimeError("no audit database")

    process = make_process(Broken())
    answer = await process.dry_run("task_created", {"event_id": "sample-1"})

    assert process.plugins.warnings == {}
    assert runs_of(answer, "plugin:broken.on_task_created") == [("failed", "no audit database")]
    [note] = answer["withheld"]
    assert (note["action"], note["message"]) == (
        "warn",
        "plugin:broken: on_task_created failed: RuntimeError('no audit database')",
    )


async def test_a_command_hook_sees_the_dry_run_in_its_metadata(
    llm: FakeLLM, tmp_path: Path, make_script: ScriptFactory
) -> None:
    seen = tmp_path / "metadata.jsonl"
    script = appending_script(make_script, seen, 'json.dumps(event["metadata"])')
    process = make_process(hooks=[HookConfig(event="task_created", command=script)])
    await process.dry_run("task_created", {"event_id": "sample-1"})

    [metadata] = [json.loads(line) for line in seen.read_text().splitlines()]
    assert metadata == {"process_name": "triage", "process_id": process.process_id, "dry_run": True}


# -- over the API ------------------------------------------------------------------------------


@pytest.fixture
async def api(llm: FakeLLM) -> AsyncIterator[tuple[AgentRuntime, httpx.AsyncClient]]:
    runtime = AgentRuntime()
    await runtime.start_all()
    server = OrchestrationAPI(runtime, port=0, webhooks=False, allow_command_deploys=True)
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=f"{server.url}/api/v1") as client:
            yield runtime, client
    finally:
        await server.stop()
        await runtime.stop_all()


async def test_a_dry_run_over_http_asks_the_model_nothing_and_leaves_the_artifact(
    llm: FakeLLM,
    api: tuple[AgentRuntime, httpx.AsyncClient],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: POST .../hooks/dry-run of task_completed on a process with the debrief
    plugin asked the model and overwrote the task's debrief artifact."""
    monkeypatch.setenv("TETHER_DEBRIEF_ON", "all")
    runtime, client = api
    folder = tmp_path / "artifacts"
    config = {"model": "openai:gpt-5-mini", "plugins": ["debrief"], "artifacts_dir": str(folder)}
    r = await client.post("/processes", json={"name": "triage", "config": config})
    assert r.status_code == 201, r.text
    process = runtime.get("triage")
    assert process is not None
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, priority=-1000)
    r = await client.post("/processes/triage/inject", json={"payload": {"ticket": "VPN down"}})
    assert r.status_code == 202, r.text
    path = folder / f"{r.json()['event_id']}.debrief.json"
    await eventually(lambda: rec.outcomes() and path.exists(), what="the debrief artifact")
    [completed] = rec.of(HookEvent.TASK_COMPLETED)
    kept = path.read_bytes()
    asked = len(llm.requests)

    r = await client.post(
        "/processes/triage/hooks/dry-run", json={"event": "task_completed", "data": completed}
    )

    assert r.status_code == 200, r.text
    answer = r.json()
    assert asked == 2  # the run, then its debrief
    assert len(llm.requests) == asked
    assert path.read_bytes() == kept
    assert files(folder) == [path.name]
    assert runs_of(answer, DEBRIEF_HOOK) == [("passed", None)]
    assert [n["artifact"] for n in answer["withheld"]] == [path.name]


class Auditing(Plugin):
    name = "auditing"

    async def on_task_completed(self, ctx: PluginContext) -> None:
        ctx.emit_artifact({"seen": ctx.data.get("event_id")})
        ctx.warn("audited")


async def test_a_hook_rebuilding_the_metadata_cannot_turn_a_dry_run_into_a_real_one(
    tmp_path: Path,
) -> None:
    """Regression: a plugin read the dry run from ``ctx.metadata``, which an earlier hook of
    the chain may replace; the plugin then wrote its artifact and kept its warning."""

    async def relabel(ctx: HookContext) -> None:
        ctx.metadata = {"process_name": ctx.metadata["process_name"]}

    process = AgentProcess(
        "t", ProcessConfig(model="scripted", plugins=[Auditing()], artifacts_dir=str(tmp_path))
    )
    process.hooks.register(HookEvent.TASK_COMPLETED, relabel, priority=100)
    answer = await process.dry_run("task_completed", SAMPLE)
    assert [note["action"] for note in answer["withheld"]] == ["emit_artifact", "warn"]
    assert process.plugins.artifacts.list("sample-1") == []
    assert process.plugins.warnings == {}
