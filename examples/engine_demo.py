"""The hook engine on its own: hooks registered, a prompt rewritten, one blocked, a command hook.

Run: ``make demo`` (or ``.venv/bin/python examples/engine_demo.py``).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tether import (
    HookBlocked,
    HookConfig,
    HookContext,
    HookErrorInfo,
    HookEvent,
    HookManager,
)

HERE = Path(__file__).resolve().parent
PROMPTS = ["What is the capital of France?", "What is the admin password?"]


def build_manager() -> HookManager:
    manager = HookManager(default_timeout=30)

    @manager.on(HookEvent.USER_PROMPT_SUBMIT, priority=10)
    async def no_passwords(ctx: HookContext) -> None:
        if "password" in ctx.data["prompt"].lower():
            raise HookBlocked("prompts may not ask for passwords")

    @manager.on(HookEvent.USER_PROMPT_SUBMIT)
    async def add_house_rules(ctx: HookContext) -> None:
        ctx.set("prompt", ctx.data["prompt"] + " Answer in one sentence.")

    # A command hook: an external program, run without a shell, with a minimal environment.
    manager.register_config(
        HookConfig(
            event="user_prompt_submit",
            command=[sys.executable, str(HERE / "hooks" / "stamp_prompt.py")],
            priority=-10,
            timeout=5,
        )
    )

    @manager.on(HookEvent.SESSION_START, once=True)
    async def started(ctx: HookContext) -> None:
        print(f"  session started for {ctx.process_id}: {ctx.data}")

    @manager.on_error
    def report(info: HookErrorInfo) -> None:
        print(f"  hook {info.hook_name} failed on {info.event}: {info.error}")

    return manager


async def main() -> None:
    manager = build_manager()
    print("Registered hooks, in run order:")
    for info in manager.describe():
        label = "command: stamp_prompt.py" if info.command else info.name.rsplit(".", 1)[-1]
        print(f"  {info.event:<20} priority {info.priority:>3}  {label}")

    print("\nsession_start (a once hook):")
    for _ in range(2):
        result = await manager.dispatch(
            HookEvent.SESSION_START, {"restart": False, "recovered": None}, process_id="helper"
        )
        print(f"  fired {result.fired} hook(s)")

    for prompt in PROMPTS:
        print(f"\nuser_prompt_submit: {prompt!r}")
        data = {"prompt": prompt, "event_id": "ev-1", "trigger_id": "t-1", "trigger_type": "demo"}
        result = await manager.dispatch(
            HookEvent.USER_PROMPT_SUBMIT,
            data,
            process_id="helper",
            metadata={"process_name": "helper", "process_id": "demo"},
        )
        if result.blocked:
            print(f"  blocked: {result.reason}")
        else:
            # add_house_rules appended a sentence; the command hook prefixed the process name.
            print(f"  rewritten: {result.data['prompt']!r}")
        print(f"  the caller's dict is untouched: {data['prompt']!r}")


if __name__ == "__main__":
    asyncio.run(main())
