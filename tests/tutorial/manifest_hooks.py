"""Step 4: hooks in a manifest, and why the control API refuses to deploy them."""
import asyncio
import logging

import httpx

from tether import (
    AgentRuntime, OrchestrationAPI, load_manifest, manifest_to_process_config,
)

logging.basicConfig(level=logging.CRITICAL)

config = manifest_to_process_config(load_manifest("triage.agent"))
for hook in config.hooks:
    print(f"{hook.event:<19} command={hook.command} timeout={hook.timeout} "
          f"fail_closed={hook.fail_closed}")

DEPLOY = {
    "name": "triage",
    "config": {
        "instructions": "You triage support tickets.",
        "hooks": [{"event": "user_prompt_submit", "command": ["python3", "hooks/gate.py"]}],
    },
}


async def deploy(allow_command_deploys: bool) -> None:
    runtime = AgentRuntime()
    api = OrchestrationAPI(runtime, port=9781, allow_command_deploys=allow_command_deploys)
    await api.start()
    async with httpx.AsyncClient() as client:
        r = await client.post("http://127.0.0.1:9781/api/v1/processes", json=DEPLOY)
    body = r.json()
    print(f"allow_command_deploys={allow_command_deploys}: HTTP {r.status_code}",
          body.get("error", {}).get("code", body.get("name")))
    if r.status_code == 403:
        print("  ", body["error"]["message"][:118] + "...")
    await api.stop()
    await runtime.stop_all()


async def main() -> None:
    await deploy(allow_command_deploys=False)
    await deploy(allow_command_deploys=True)


asyncio.run(main())
