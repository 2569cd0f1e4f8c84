"""Step 2: refuse events and runs, rewrite the prompt, and see fail_closed at work."""
import asyncio
import logging
import os

os.environ["OPENAI_BASE_URL"] = "http://127.0.0.1:8781/v1"
os.environ["OPENAI_API_KEY"] = "not-a-real-key"
logging.basicConfig(level=logging.ERROR)  # keep the hook-error tracebacks out of the output

from tether.testing import FakeLLM
from tether import (
    AgentProcess, HookBlocked, HookConfig, HookContext, HookEvent, HookManager,
    ProcessConfig, TriggerEvent,
)


async def retired_triggers(ctx: HookContext) -> None:
    # task_created: before the event is queued. Data has no payload, only IDs.
    if ctx.data["trigger_id"] == "legacy-cron":
        raise HookBlocked("legacy-cron was retired")


async def no_credentials(ctx: HookContext) -> None:
    # user_prompt_submit: the full prompt, payload included.
    if "password" in ctx.data["prompt"].lower():
        raise HookBlocked("tickets about passwords go to the identity team")


async def house_rules(ctx: HookContext) -> None:
    ctx.set("prompt", ctx.data["prompt"] + "\n\nHouse rules: answer in one sentence.")


config = ProcessConfig(
    model="openai:gpt-5-mini",
    instructions="You triage support tickets.",
    hooks=[
        HookConfig(event="task_created", callback=retired_triggers),
        HookConfig(event="user_prompt_submit", callback=no_credentials,
                   priority=10, fail_closed=True),
        HookConfig(event="user_prompt_submit", callback=house_rules),
    ],
)


def ticket(text: str, trigger_id: str = "helpdesk") -> TriggerEvent:
    return TriggerEvent(trigger_id=trigger_id, trigger_type="webhook", payload={"ticket": text})


async def main() -> None:
    llm = FakeLLM()
    await llm.start()
    process = AgentProcess("triage", config)
    await process.start()
    ids = [
        await process.inject(ticket("Nightly export failed", trigger_id="legacy-cron")),
        await process.inject(ticket("Please reset my password")),
        await process.inject(ticket("Login page is down")),
    ]
    for event_id in ids[1:]:  # wait for each run to end (task_created refused the first: it never runs)
        await process.outcome(event_id, timeout=30)

    print("runs:", process.status()["invocation_count"])
    for dead in process.dead_letters:
        print("dead-lettered:", dead["event"].trigger_id, "|", dead["reason"], "|", dead["error"])
    print("the model received:", "..." + llm.prompts[-1][-75:].replace("\n", " "))
    await process.stop()
    await llm.stop()

    # fail_closed decides what a broken or slow hook means.
    async def slow_policy_service(ctx: HookContext) -> None:
        await asyncio.sleep(2)

    for fail_closed in (False, True):
        hooks = HookManager()
        hooks.register(HookEvent.USER_PROMPT_SUBMIT, slow_policy_service,
                       timeout=0.5, fail_closed=fail_closed)
        result = await hooks.dispatch(HookEvent.USER_PROMPT_SUBMIT, data={"prompt": "hi"})
        print(f"fail_closed={fail_closed}: blocked={result.blocked} "
              f"errors={len(result.errors)} reason={result.reason!r}")


asyncio.run(main())
