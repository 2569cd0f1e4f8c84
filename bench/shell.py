"""A command hook running /bin/true beside a bare asyncio subprocess of the same program.

Run: ``.venv/bin/python bench/shell.py``. Both sides get the same event envelope on stdin and
collect stdout and stderr; runs are interleaved so drift in the machine hits both alike.

Target (issue 2): ShellHook at most 1.1x the bare ``asyncio.create_subprocess_exec``.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time

from tether import HookContext, HookEvent, ShellHook

RUNS = 300
PROGRAM = "/bin/true"


async def bare(payload: bytes) -> None:
    proc = await asyncio.create_subprocess_exec(
        PROGRAM,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    await proc.communicate(payload)


async def main() -> None:
    ctx = HookContext(
        HookEvent.USER_PROMPT_SUBMIT,
        "bench",
        {"prompt": "What is the capital of France?", "event_id": "ev-1", "trigger_id": "t-1"},
        {"process_name": "bench", "process_id": "0000"},
    )
    payload = json.dumps(ctx.envelope(), default=str).encode()
    hook = ShellHook([PROGRAM])
    for _ in range(20):  # warm both paths
        await hook.run(ctx)
        await bare(payload)

    hook_times: list[float] = []
    bare_times: list[float] = []
    for _ in range(RUNS):
        start = time.perf_counter()
        await hook.run(ctx)
        hook_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        await bare(payload)
        bare_times.append(time.perf_counter() - start)

    print(f"{PROGRAM} with the event on stdin, {RUNS} runs each, interleaved")
    print(f"{'':<34}{'mean ms':>10}{'median ms':>11}")
    for label, times in (
        ("ShellHook.run", hook_times),
        ("asyncio.create_subprocess_exec", bare_times),
    ):
        mean, median = statistics.fmean(times) * 1e3, statistics.median(times) * 1e3
        print(f"{label:<34}{mean:>10.3f}{median:>11.3f}")
    ratio = statistics.fmean(hook_times) / statistics.fmean(bare_times)
    print(f"ratio (ShellHook / bare, means): {ratio:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
