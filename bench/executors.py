"""One Python hook per event, four ways: a spawned command, a persistent co-process, an HTTP
service on loopback, and an in-process callback, all dispatched through a HookManager.

Run: ``.venv/bin/python bench/executors.py``. The policy is the same everywhere (block a prompt
that mentions a password, else append a sentence to it); the spawned and persistent hooks run
the same Python interpreter; the HTTP service is a starlette app under uvicorn in a process of
its own. Each kind is warmed first; then the kinds take turns, round after round.

Goal (issue 17): persistent >= 50x faster than spawning the same Python hook, HTTP >= 20x.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from tether import HookContext, HookEvent, HookManager, ShellHook
from tether.hooks import HttpHook, PersistentHook

EVENT = HookEvent.USER_PROMPT_SUBMIT
DATA = {"prompt": "What is the capital of France?", "event_id": "ev-1", "trigger_id": "t-1"}
#: Rounds, and dispatches of each kind per round: the kinds take turns, round after round, so
#: drift in the machine's load (other programs) hits every kind alike.
ROUNDS = 40
PER_ROUND = {
    "spawned command": 2,
    "persistent": 50,
    "HTTP, uvicorn": 25,
    "HTTP, minimal": 25,
    "callback": 500,
}

POLICY = """
def decide(data):
    prompt = data.get("prompt", "")
    if "password" in prompt.lower():
        return {"block": True, "reason": "prompts may not ask for passwords"}
    return {"data": {**data, "prompt": prompt + " Answer in one sentence."}}
"""

SPAWNED = f"""#!{sys.executable}
import json, sys
{POLICY}
event = json.load(sys.stdin)
print(json.dumps(decide(event["data"])))
"""

PERSISTENT = f"""#!{sys.executable}
from tether.hookserver import serve
{POLICY}
@serve
def handle(event):
    return decide(event["data"])
"""

#: The policy as a starlette app under uvicorn (h11), as tether's own servers run.
SERVICE = f"""
import asyncio, sys
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from tether.api._server import AppServer
{POLICY}
async def hook(request: Request) -> JSONResponse:
    return JSONResponse(decide((await request.json())["data"]))

async def main() -> None:
    server = AppServer(Starlette(routes=[Route("/hook", hook, methods=["POST"])]),
                       "127.0.0.1", 0, name="policy")
    await server.start()
    print(server.port, flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    await server.stop()

asyncio.run(main())
"""

#: The policy behind a minimal keep-alive HTTP/1.1 server on asyncio streams: what is left is
#: the client side (tether's HTTP hook and httpx) and the loopback round trip.
MINIMAL_SERVICE = f"""
import asyncio, json, sys
{POLICY}
async def serve(reader, writer):
    while not reader.at_eof():
        try:
            head = await reader.readuntil(b"\\r\\n\\r\\n")
        except asyncio.IncompleteReadError:  # the client closed the connection
            break
        length = 0
        for line in head.split(b"\\r\\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        event = json.loads(await reader.readexactly(length))
        body = json.dumps(decide(event["data"])).encode()
        writer.write(b"HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\n"
                     b"content-length: " + str(len(body)).encode() + b"\\r\\n\\r\\n" + body)
        await writer.drain()

async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

asyncio.run(main())
"""


def _callback() -> Callable[[HookContext], Awaitable[None]]:
    namespace: dict[str, Any] = {}
    exec(textwrap.dedent(POLICY), namespace)  # the very same policy source
    decide = namespace["decide"]

    async def callback(ctx: HookContext) -> None:
        answer = decide(ctx.data)
        if answer.get("block"):
            from tether import HookBlocked

            raise HookBlocked(answer["reason"])
        ctx.data = answer["data"]

    return callback


async def warm(manager: HookManager) -> None:
    """Start the co-process, open the connection, fill the caches."""
    for _ in range(10):
        result = await manager.dispatch(EVENT, DATA, process_id="bench")
        assert not result.errors, result.errors


async def timed(manager: HookManager, runs: int, into: list[float]) -> None:
    for _ in range(runs):
        start = time.perf_counter()
        await manager.dispatch(EVENT, DATA, process_id="bench")
        into.append(time.perf_counter() - start)


async def _service(source: str) -> tuple[asyncio.subprocess.Process, int]:
    """A policy service in a process of its own (it ends when its stdin closes), and its port."""
    service = await asyncio.create_subprocess_exec(
        sys.executable, "-c", source, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert service.stdout is not None
    return service, int(await service.stdout.readline())


async def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="tether-bench-"))
    spawned, persistent_script = folder / "spawned.py", folder / "persistent.py"
    spawned.write_text(SPAWNED)
    persistent_script.write_text(PERSISTENT)
    for script in (spawned, persistent_script):
        script.chmod(0o755)
    services = [await _service(SERVICE), await _service(MINIMAL_SERVICE)]
    persistent = PersistentHook([str(persistent_script)])
    http = [HttpHook(f"http://127.0.0.1:{port}/hook") for _, port in services]
    hooks: dict[str, Callable[[HookContext], Awaitable[None]]] = {
        "spawned command": ShellHook([str(spawned)]).callback,
        "persistent": persistent.callback,
        "HTTP, uvicorn": http[0].callback,
        "HTTP, minimal": http[1].callback,
        "callback": _callback(),
    }
    results: dict[str, list[float]] = {label: [] for label in hooks}
    managers = {label: HookManager() for label in hooks}
    for label, fn in hooks.items():
        managers[label].register(EVENT, fn)
    try:
        for manager in managers.values():
            await warm(manager)
        for _ in range(ROUNDS):
            for label, manager in managers.items():
                await timed(manager, PER_ROUND[label], results[label])
    finally:
        await persistent.aclose()
        for hook in http:
            await hook.aclose()
        for service, _ in services:
            assert service.stdin is not None
            service.stdin.close()
            await service.wait()

    spawn = statistics.median(results["spawned command"])
    print("One Python hook per event (user_prompt_submit), dispatched through a HookManager;")
    print(f"{ROUNDS} interleaved rounds; 'vs spawned' compares medians")
    print(f"{'executor':<18}{'runs':>7}{'median us':>12}{'mean us':>12}{'vs spawned':>12}")
    for label, times in results.items():
        median = statistics.median(times)
        print(
            f"{label:<18}{len(times):>7}{median * 1e6:>12.1f}"
            f"{statistics.fmean(times) * 1e6:>12.1f}{spawn / median:>11.1f}x"
        )
    faster = {k: spawn / statistics.median(v) for k, v in results.items()}

    def verdict(label: str, goal: float) -> str:
        return f"{label} {faster[label]:.0f}x: {'met' if faster[label] >= goal else 'MISSED'}"

    print(
        f"goal: persistent >= 50x ({verdict('persistent', 50)}); HTTP >= 20x "
        f"({verdict('HTTP, uvicorn', 20)}; {verdict('HTTP, minimal', 20)})"
    )


if __name__ == "__main__":
    asyncio.run(main())
