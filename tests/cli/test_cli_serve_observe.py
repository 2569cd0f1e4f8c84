"""``tether serve`` with observability: it prints where the dashboard and the metrics are,
serves /metrics (open to this machine with --open-metrics), and logs JSON lines."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from _cli_support import CLI, running, serving
from _net_support import free_port


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


async def test_serve_prints_the_dashboard_and_metrics_and_serves_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = write(tmp_path / "a.agent", "name: desk\nmodel: scripted\n")
    options = {"token": "serve-token-1", "allow_command_deploys": False, "quiet": True}
    served = serving([agent], open_metrics=True, **options)
    async with served as url, httpx.AsyncClient(base_url=url) as client:
        page = await client.get("/")
        metrics = await client.get("/metrics")  # no token: open to this machine
        data = await client.get("/api/v1/processes")
    out = capsys.readouterr().out
    assert f"  dashboard  {url}/" in out
    assert f"  metrics    {url}/metrics (open to this machine)" in out
    assert page.status_code == 200
    assert metrics.status_code == 200
    names = {family.name for family in text_string_to_metric_families(metrics.text)}
    assert {"tether_process_up", "tether_queue_depth", "tether_hook_runs"} <= names
    assert data.status_code == 401


@pytest.mark.slow
async def test_serve_logs_json_lines_on_stderr(tmp_path: Path) -> None:
    hook = write(tmp_path / "hook.py", "import sys; sys.exit(4)\n")
    agent = write(
        tmp_path / "a.agent",
        f"""\
        name: desk
        model: scripted
        hooks:
          - {{event: task_created, command: ["{sys.executable}", "{hook}"]}}
        """,
    )
    port = free_port()
    env = {**os.environ, "NO_COLOR": "1"}
    command = (*CLI, "serve", str(agent), "--port", str(port), "--log-format", "json")
    async with running(*command, env=env) as tether:
        await tether.read_until("Ctrl-C stops")
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}/api/v1") as client:
            r = await client.post("/processes/desk/inject", json={})
            assert r.status_code == 202
        await asyncio.sleep(0.3)
        _, err = await tether.stop(signal.SIGTERM)
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert lines, err
    failed = [line for line in lines if "failed on task_created" in line["message"]]
    assert failed[0]["process"] == "desk"
    assert failed[0]["event_id"] == r.json()["event_id"]
    assert any(line["message"].startswith("control API listening") for line in lines)
