"""Step 1: register one hook for every event and watch which ones a process fires."""
import asyncio
import os
import time

os.environ["OPENAI_BASE_URL"] = "http://127.0.0.1:8781/v1"  # the fake model server
os.environ["OPENAI_API_KEY"] = "not-a-real-key"

from tether.testing import FakeLLM
from tether import (
    AgentProcess, HookConfig, HookContext, HookEvent, ProcessConfig, TriggerEvent,
)

T0 = time.perf_counter()
SHOWN = ("restart", "recovered", "reason", "trigger_type", "prompt", "outcome", "duration_ms")


async def trace(ctx: HookContext) -> None:
    data = {k: v for k, v in ctx.data.items() if k in SHOWN}
    if "prompt" in data:
        data["prompt"] = data["prompt"][:30] + "..."
    print(f"{time.perf_counter() - T0:5.2f}s  {ctx.event.value:<19} {data}")


config = ProcessConfig(
    model="openai:gpt-5-mini",
    instructions="You triage support tickets.",
    hooks=[HookConfig(event=event.value, callback=trace) for event in HookEvent],
)


async def main() -> None:
    llm = FakeLLM()
    await llm.start()
    process = AgentProcess("triage", config)
    print("hooks registered:", process.status()["hook_count"])
    await process.start()
    event_id = await process.inject(TriggerEvent(
        trigger_id="manual", trigger_type="manual", payload={"ticket": "Login page is down"},
    ))
    await process.outcome(event_id, timeout=30)  # waits for the run to end
    await process.stop()
    await llm.stop()


asyncio.run(main())
