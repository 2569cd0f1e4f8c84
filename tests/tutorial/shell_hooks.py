"""Step 3: command hooks (ShellHook): stdin JSON, stdout JSON, a minimal environment."""
import asyncio
import json
import logging
import os
import sys
from pathlib import Path

os.environ["OPENAI_BASE_URL"] = "http://127.0.0.1:8781/v1"
os.environ["OPENAI_API_KEY"] = "not-a-real-key"
os.environ["TICKET_QUEUE"] = "support-eu"
logging.basicConfig(level=logging.CRITICAL)

from tether.testing import FakeLLM
from tether import (
    AgentProcess, HookConfig, HookContext, HookEvent, ProcessConfig, ShellHook, TriggerEvent,
)

HERE = Path(__file__).parent
AUDIT_LOG = HERE / "out" / "audit.log"

config = ProcessConfig(
    model="openai:gpt-5-mini",
    instructions="You triage support tickets.",
    hooks=[
        HookConfig(
            event="user_prompt_submit",
            command=[sys.executable, str(HERE / "hooks" / "gate.py")],
            timeout=5,
            fail_closed=True,
            env={"AUDIT_LOG": str(AUDIT_LOG)},
            env_passthrough=["TICKET_QUEUE"],
        ),
    ],
)


async def main() -> None:
    AUDIT_LOG.unlink(missing_ok=True)
    llm = FakeLLM()
    await llm.start()
    process = AgentProcess("triage", config)
    await process.start()
    ids = [
        await process.inject(TriggerEvent(trigger_id="helpdesk", trigger_type="webhook",
                                          payload={"ticket": text}))
        for text in ("Please refund order 1182", "Printer on floor 3 is jammed")
    ]
    for event_id in ids:  # wait for each run to end
        await process.outcome(event_id, timeout=30)
    print("runs:", process.status()["invocation_count"])
    for dead in process.dead_letters:
        print("dead-lettered:", dead["reason"], "|", dead["error"])
    for line in AUDIT_LOG.read_text().splitlines():
        print("audit:", line)
    await process.stop()
    await llm.stop()

    # A non-zero exit is a broken hook, not a block.
    broken = ShellHook(command=[sys.executable, str(HERE / "hooks" / "broken.py")])
    ctx = HookContext(event=HookEvent.TASK_COMPLETED, process_id="triage", data={})
    try:
        await broken.run(ctx)
    except RuntimeError as exc:
        print("exit 2 ->", type(exc).__name__ + ":",
              str(exc).replace(sys.executable, "python").replace(f"{HERE}/", ""))


asyncio.run(main())
