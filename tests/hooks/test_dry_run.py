"""process.dry_run: a sample event through the resolved chain, command hooks really executed,
answered as a per-hook trace and the final decision, with nothing queued and nothing used up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import ScriptFactory
from tether import AgentProcess, ProcessConfig
from tether.hooks import HookBlocked, HookConfig, HookContext, HookEvent, HookManager
from tether.models import ScriptedModel

UPS = HookEvent.USER_PROMPT_SUBMIT
SAMPLE = {
    "prompt": "The printer on floor 3 is jammed",
    "event_id": "sample-1",
    "trigger_id": "helpdesk",
    "trigger_type": "webhook",
}
CREATED = {"event_id": "sample-1", "trigger_id": "helpdesk", "trigger_type": "webhook"}


async def no_printers(ctx: HookContext) -> None:
    if "printer" in ctx.data["prompt"].lower():
        raise HookBlocked("printer tickets go to facilities")


async def audit(ctx: HookContext) -> None:
    pass


def tagger_script(make_script: ScriptFactory, marker: Path) -> str:
    """A command hook that notes each run in ``marker`` and tags the prompt."""
    return make_script(
        f"""
        import json, sys
        event = json.load(sys.stdin)
        with open({str(marker)!r}, "a") as f:
            f.write(event["event"] + "\\n")
        data = dict(event["data"], prompt="[tagged] " + event["data"]["prompt"])
        print(json.dumps({{"data": data}}))
        """
    )


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


def process_with(model: ScriptedModel, **config: Any) -> AgentProcess:
    return AgentProcess("triage", ProcessConfig(model=model, **config))


async def test_a_dry_run_really_runs_the_command_hook_and_traces_every_hook(
    tmp_path: Path, make_script: ScriptFactory, model: ScriptedModel
) -> None:
    marker = tmp_path / "ran"
    script = tagger_script(make_script, marker)
    process = process_with(
        model, hooks=[HookConfig(event="user_prompt_submit", command=[script], priority=10)]
    )
    process.hooks.register(UPS, no_printers, name="no-printers")
    answer = await process.dry_run("user_prompt_submit", SAMPLE)

    assert marker.read_text() == "user_prompt_submit\n"
    assert (answer["event"], answer["blocked"], answer["reason"], answer["fired"]) == (
        "user_prompt_submit",
        True,
        "printer tickets go to facilities",
        2,
    )
    tagged, blocker = answer["trace"]
    assert (tagged["hook_name"], tagged["source"], tagged["outcome"]) == (
        script,
        "config",
        "applied",
    )
    assert tagged["data_before"]["prompt"] == SAMPLE["prompt"]
    assert tagged["data_after"]["prompt"] == "[tagged] " + SAMPLE["prompt"]
    assert tagged["duration_ms"] > 0
    assert tagged["patch_applied"] is False  # the block means the new prompt is not used
    assert (blocker["hook_name"], blocker["outcome"]) == ("no-printers", "blocked")
    assert blocker["data_before"] == tagged["data_after"]
    assert blocker["error"] == "printer tickets go to facilities"
    assert answer["data"]["prompt"] == "[tagged] " + SAMPLE["prompt"]
    assert json.loads(json.dumps(answer)) == answer  # JSON-ready for the API


async def test_a_dry_run_that_passes_reports_the_prompt_the_agent_would_get(
    tmp_path: Path, make_script: ScriptFactory, model: ScriptedModel
) -> None:
    script = tagger_script(make_script, tmp_path / "ran")
    process = process_with(model, hooks=[HookConfig(event="user_prompt_submit", command=script)])
    process.hooks.register(UPS, no_printers, priority=10)
    answer = await process.dry_run(UPS, {**SAMPLE, "prompt": "VPN is down"})
    assert (answer["blocked"], answer["reason"]) == (False, None)
    assert answer["data"]["prompt"] == "[tagged] VPN is down"
    assert [(t["outcome"], t["patch_applied"]) for t in answer["trace"]] == [
        ("passed", False),
        ("applied", True),
    ]


async def test_a_dry_run_queues_nothing_and_does_not_touch_the_agent(
    model: ScriptedModel,
) -> None:
    process = process_with(model)
    process.hooks.register(HookEvent.TASK_CREATED, audit)
    process.hooks.register(UPS, no_printers)
    async with process:
        before = process.status()
        await process.dry_run(UPS, SAMPLE)
        await process.dry_run(HookEvent.TASK_CREATED, CREATED)
        after = process.status()
    for key in ("queue_size", "invocation_count", "in_flight", "dead_letter_count"):
        assert after[key] == before[key], key
    assert model.requests == []
    assert process.dead_letters == []
    assert process.hook_runs() == []  # a dry run is not part of the history


async def test_a_blocked_dry_run_of_task_created_dead_letters_nothing(model: ScriptedModel) -> None:
    async def closed(ctx: HookContext) -> None:
        raise HookBlocked("the desk is closed")

    process = process_with(model)
    process.hooks.register(HookEvent.TASK_CREATED, closed)
    answer = await process.dry_run("task_created", CREATED)
    assert (answer["blocked"], answer["reason"]) == (True, "the desk is closed")
    assert process.dead_letters == []
    assert process.state.value == "created"


async def test_a_dry_run_does_not_use_up_a_once_hook(model: ScriptedModel) -> None:
    process = process_with(model)
    hook_id = process.hooks.register(UPS, audit, once=True, name="first-prompt")
    for _ in range(2):
        answer = await process.dry_run(UPS, SAMPLE)
        assert [t["hook_name"] for t in answer["trace"]] == ["first-prompt"]
    assert hook_id in process.hooks
    await process.hooks.dispatch(UPS, SAMPLE)  # a real dispatch does use it up
    assert hook_id not in process.hooks


async def test_a_dry_run_does_not_use_up_an_async_once_hook(model: ScriptedModel) -> None:
    process = process_with(model)
    hook_id = process.hooks.register(UPS, audit, once=True, mode="async", name="bg")
    for _ in range(2):
        answer = await process.dry_run(UPS, SAMPLE)
        assert [(t["hook_name"], t["mode"]) for t in answer["trace"]] == [("bg", "async")]
    assert hook_id in process.hooks


async def test_a_dry_run_runs_async_hooks_inline_and_traces_them(model: ScriptedModel) -> None:
    seen: list[str] = []

    async def background(ctx: HookContext) -> None:
        seen.append(ctx.data["prompt"])
        ctx.data["prompt"] = "changed in the background"

    async def rewrite(ctx: HookContext) -> None:
        ctx.data["prompt"] = "rewritten"

    process = process_with(model)
    process.hooks.register(UPS, background, mode="async", name="bg")
    process.hooks.register(UPS, rewrite, name="rewrite")
    answer = await process.dry_run(UPS, {**SAMPLE, "prompt": "hello"})
    assert seen == ["rewritten"]  # ran during the dry run, after the chain
    assert answer["data"]["prompt"] == "rewritten"  # its own copy: the decision is unchanged
    rewrite_run, bg_run = answer["trace"]
    assert (rewrite_run["hook_name"], bg_run["hook_name"], bg_run["mode"]) == (
        "rewrite",
        "bg",
        "async",
    )
    assert bg_run["data_before"]["prompt"] == "rewritten"
    assert bg_run["data_after"]["prompt"] == "changed in the background"


async def test_a_dry_run_traces_matcher_skips_and_leaves_out_disabled_hooks(
    tmp_path: Path, make_script: ScriptFactory, model: ScriptedModel
) -> None:
    marker = tmp_path / "ran"
    script = tagger_script(make_script, marker)
    hook = HookConfig(
        event="user_prompt_submit",
        command=script,
        name="billing",
        matcher={"trigger_id": "billing"},
    )
    process = process_with(model, hooks=[hook])
    off = process.hooks.register(UPS, audit, name="off")
    process.hooks.set_enabled(off, False)
    answer = await process.dry_run(UPS, SAMPLE)
    assert [(t["hook_name"], t["outcome"]) for t in answer["trace"]] == [("billing", "skipped")]
    assert not marker.exists()
    assert answer["fired"] == 0


async def test_a_dry_run_covers_the_inherited_and_shared_hooks_of_the_chain(
    model: ScriptedModel,
) -> None:
    shared = HookManager()
    shared.register(UPS, audit, name="fleet")
    parent = HookManager()
    parent.register(UPS, audit, name="org")
    process = AgentProcess("triage", ProcessConfig(model=model), hooks=shared)
    process.hooks.inherit(parent)
    process.hooks.register(UPS, audit, name="own")
    answer = await process.dry_run(UPS, SAMPLE)
    assert [(t["hook_name"], t["source"]) for t in answer["trace"]] == [
        ("own", "code"),
        ("org", "inherited"),
        ("fleet", "shared"),
    ]
    assert all(t["process_id"] == "triage" for t in answer["trace"])


async def test_a_dry_run_reports_hook_errors_and_fail_closed_decisions(
    model: ScriptedModel,
) -> None:
    async def broken(ctx: HookContext) -> None:
        raise RuntimeError("policy file missing")

    process = process_with(model)
    broken_id = process.hooks.register(UPS, broken, fail_closed=True, name="policy")
    answer = await process.dry_run(UPS, SAMPLE)
    assert answer["blocked"] is True
    assert answer["reason"] == "hook failed (fail_closed): policy file missing"
    assert answer["errors"] == [{"hook_id": broken_id, "error": "policy file missing"}]
    [run] = answer["trace"]
    assert (run["outcome"], run["error"]) == ("failed", "policy file missing")


async def test_a_block_of_an_event_that_cannot_be_blocked_is_not_the_decision(
    model: ScriptedModel,
) -> None:
    async def refuses(ctx: HookContext) -> None:
        raise HookBlocked("no")

    process = process_with(model)
    process.hooks.register(HookEvent.TASK_COMPLETED, refuses)
    answer = await process.dry_run(
        "task_completed",
        {**CREATED, "outcome": "success", "duration_ms": 1.0, "error": None},
    )
    assert answer["blocked"] is False
    assert [t["outcome"] for t in answer["trace"]] == ["passed"]


async def test_a_dry_run_redacts_secrets_in_the_sample_the_trace_and_the_answer(
    make_script: ScriptFactory, model: ScriptedModel
) -> None:
    script = make_script(
        """
        import json, sys
        event = json.load(sys.stdin)
        data = dict(event["data"], note="key canary-123")
        print(json.dumps({"data": data}))
        """
    )
    process = process_with(
        model,
        secrets={"K": "canary-123"},
        hooks=[HookConfig(event="user_prompt_submit", command=script)],
    )

    async def leaks(ctx: HookContext) -> None:
        raise RuntimeError("rejected canary-123")

    process.hooks.register(UPS, leaks, priority=-1)
    answer = await process.dry_run(UPS, {**SAMPLE, "prompt": "my key is canary-123"})
    text = json.dumps(answer)
    assert "canary-123" not in text
    assert answer["trace"][0]["data_before"]["prompt"] == "my key is [REDACTED:K]"
    assert answer["trace"][0]["data_after"]["note"] == "key [REDACTED:K]"
    assert answer["data"]["note"] == "key [REDACTED:K]"
    assert answer["errors"][0]["error"] == "rejected [REDACTED:K]"


async def test_a_dry_run_of_an_unknown_event_names_the_valid_ones(model: ScriptedModel) -> None:
    process = process_with(model)
    with pytest.raises(ValueError, match="user_prompt_submit"):
        await process.dry_run("prompt_submitted", {})


async def test_ctx_dry_run_comes_from_the_dispatch_and_outlives_a_metadata_rewrite() -> None:
    manager = HookManager()
    seen: list[bool] = []

    async def wipes(ctx: HookContext) -> None:
        ctx.metadata.clear()

    async def looks(ctx: HookContext) -> None:
        seen.append(ctx.dry_run)

    manager.register("user_prompt_submit", wipes, priority=2)
    manager.register("user_prompt_submit", looks, priority=1)
    await manager.dispatch("user_prompt_submit", {"prompt": "hi"}, dry_run=True)
    await manager.dispatch("user_prompt_submit", {"prompt": "hi"})
    assert seen == [True, False]
