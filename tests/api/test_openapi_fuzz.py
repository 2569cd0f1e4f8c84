"""The control API matches its own OpenAPI document under schemathesis: the served
``/api/v1/openapi.json``, every check on, bounded in examples, 0 failures; once without a token
(no security declared) and once with one (bearer security declared and enforced).

schemathesis runs as its own program against a real server on a free port, configured by
``schemathesis.toml`` beside this file.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tether import AgentRuntime, HookContext, HookEvent, HookManager, OrchestrationAPI

HERE = Path(__file__).parent
TOKEN = "fuzz-token-7d1e"
#: Test cases per operation and phase: enough to cross every check, small enough for CI.
MAX_EXAMPLES = 4
SEED = 20261201

st = shutil.which("st", path=os.path.dirname(sys.executable))
#: Skipped without schemathesis only off CI: under CI (as .ci/run runs) a missing one fails.
_ON_CI = os.environ.get("CI", "").lower() not in ("", "0", "false")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(st is None and not _ON_CI, reason="schemathesis is a dev dependency"),
]


async def audit(ctx: HookContext) -> None:
    """A hook the served process has (tag 'audit'), so enable and disable find one."""


@pytest.fixture
async def served(request: pytest.FixtureRequest) -> AsyncIterator[OrchestrationAPI]:
    from tether.telemetry import Telemetry

    # With metrics (prometheus_client is a dev dependency): /metrics answers, not 503.
    runtime = AgentRuntime(hooks=HookManager(), telemetry=Telemetry.from_env(metrics=True))
    process = await runtime.add_process(
        "triage", {"model": "scripted", "instructions": "You triage support tickets."}
    )
    process.hooks.register(HookEvent.TASK_COMPLETED, audit, tag="audit")
    await runtime.start_all()
    api = OrchestrationAPI(runtime, port=0, token=request.param)
    await api.start()
    try:
        yield api
    finally:
        await api.stop()
        await runtime.stop_all()


def documented_command(st: str, config: str, url: str) -> list[str]:
    """The command docs/reliability.md gives for a run by hand (this test adds the options that
    keep its output plain and its runs independent)."""
    return [
        st,
        "--config-file",
        config,
        "run",
        f"{url}/api/v1/openapi.json",
        "--checks",
        "all",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        str(SEED),
    ]


def test_the_command_of_the_docs_is_the_one_this_test_runs() -> None:
    """Regression: docs/reliability.md's command put --config-file after `run` (it belongs to
    `st`), then ran 100 examples per operation instead of the test's 4 (many minutes)."""
    text = (HERE.parents[1] / "docs" / "reliability.md").read_text()
    block = re.search(r"```sh\n(\.venv/bin/st .*?)```", text, re.DOTALL)
    assert block is not None
    documented = shlex.split(block.group(1).replace("\\\n", " "))
    config = "tests/api/schemathesis.toml"
    assert documented == documented_command(".venv/bin/st", config, "http://127.0.0.1:9781")


async def schemathesis(api: OrchestrationAPI, *extra: str) -> tuple[int, str]:
    if st is None:
        pytest.fail("CI is set but schemathesis's `st` is not installed beside this Python")
    proc = await asyncio.create_subprocess_exec(
        *documented_command(st, str(HERE / "schemathesis.toml"), api.url),
        "--workers",
        "1",
        "--no-color",
        "--generation-database",
        "none",
        *extra,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "SCHEMATHESIS_TELEMETRY": "false"},
    )
    try:
        async with asyncio.timeout(300):
            out, _ = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(errors="replace")


def figures(output: str) -> str:
    """The run's summary lines: operations tested, test cases, failures."""
    lines = [
        line.strip()
        for line in output.splitlines()
        if re.search(r"Tested: |generated, |failures?|passed in", line)
    ]
    return " | ".join(lines)


@pytest.mark.parametrize("served", [None], indirect=True)
async def test_the_api_without_a_token_matches_its_document_under_schemathesis(
    served: OrchestrationAPI,
) -> None:
    code, output = await schemathesis(served)
    print(figures(output))
    assert code == 0, output[-6000:]
    tested = re.search(r"Tested: (\d+)", output)
    assert tested, output[-2000:]
    assert int(tested.group(1)) >= 30, output[-2000:]
    assert re.search(r"(\d+) generated, \1 passed", output), output[-2000:]


@pytest.mark.parametrize("served", [TOKEN], indirect=True)
async def test_the_api_with_a_token_matches_its_document_under_schemathesis(
    served: OrchestrationAPI,
) -> None:
    """Every operation declares bearer security; ignored_auth sends none or a wrong one."""
    code, output = await schemathesis(
        served, "--header", f"Authorization: Bearer {TOKEN}", "--phases", "fuzzing"
    )
    print(figures(output))
    assert code == 0, output[-6000:]
    assert re.search(r"(\d+) generated, \1 passed", output), output[-2000:]


def test_the_command_reliability_md_gives_to_run_it_by_hand_parses() -> None:
    """Regression: the documented `st run URL ... --config-file FILE` failed (`--config-file`
    is an option of `st`, not of `st run`). Its options are checked with --help (no server)."""
    import shlex
    import subprocess

    text = (HERE.parents[1] / "docs" / "reliability.md").read_text()
    block = text.split("To run it by hand against a running API:")[1].split("```sh\n")[1]
    command = shlex.split(block.split("```")[0].replace("\\\n", " "))
    assert command[0] == ".venv/bin/st"
    assert st is not None
    done = subprocess.run(
        [st, *command[1:], "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=HERE.parents[1],
        check=False,
    )
    assert done.returncode == 0, done.stderr
