"""Per-hook charts of the last hour over real HTTP (``GET /processes/{name}/hooks/stats``):
runs per minute, p50 / p95 durations, block and error rates, and the SVG drawn of them; and
the arithmetic behind them on hook runs of known times and durations."""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from _api_support import wait_for_runs
from tether import AgentRuntime, HookBlocked, HookContext, HookEvent, HookRun, OrchestrationAPI
from tether.api._charts import hook_stats
from tether.models import ScriptedModel

SVG = "{http://www.w3.org/2000/svg}"


async def audit(ctx: HookContext) -> None:
    await asyncio.sleep(0.002)


async def refuse_refunds(ctx: HookContext) -> None:
    if "refund" in ctx.data["prompt"]:
        raise HookBlocked("refunds need a human")


async def breaks(ctx: HookContext) -> None:
    raise RuntimeError("the audit service is down")


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    runtime = AgentRuntime()
    async with runtime:
        process = await runtime.add_process("desk", {"model": ScriptedModel()})
        ups = HookEvent.USER_PROMPT_SUBMIT
        process.hooks.register(ups, audit, name="audit <b>")
        process.hooks.register(ups, refuse_refunds, name="refunds")
        process.hooks.register(HookEvent.TASK_COMPLETED, breaks, name="breaks")
        process.hooks.register(HookEvent.PRE_TOOL_USE, audit, name="tools-only")
        async with (
            OrchestrationAPI(runtime, port=0, webhooks=False) as api,
            httpx.AsyncClient(base_url=f"{api.url}/api/v1") as http,
        ):
            for ticket in ("printer jam", "refund please", "vpn down", "refund again"):
                r = await http.post("/processes/desk/inject", json={"payload": {"t": ticket}})
                assert r.status_code == 202, r.text
            await wait_for_runs(http, "desk", 4, event="task_completed")
            yield http


def by_name(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {h["hook_name"]: h for h in answer["hooks"]}


async def test_each_hook_that_ran_has_its_counts_rates_and_durations(
    client: httpx.AsyncClient,
) -> None:
    r = await client.get("/processes/desk/hooks/stats")
    assert r.status_code == 200, r.text
    answer = r.json()
    assert (answer["name"], answer["window_s"]) == ("desk", 3600)
    hooks = by_name(answer)
    assert set(hooks) == {"audit <b>", "refunds", "breaks"}  # tools-only never ran
    audit_, refunds, broken = hooks["audit <b>"], hooks["refunds"], hooks["breaks"]
    assert (audit_["runs"], refunds["runs"]) == (4, 4)
    # Two refund tickets were refused at user_prompt_submit: they never completed.
    assert (refunds["blocked"], refunds["block_rate"], refunds["error_rate"]) == (2, 0.5, 0.0)
    assert (broken["runs"], broken["errors"], broken["error_rate"]) == (4, 4, 1.0)
    for hook in hooks.values():
        assert len(hook["per_bucket"]) == 60
        assert sum(hook["per_bucket"]) == hook["runs"]
        assert hook["per_bucket"][-1] == hook["runs"]  # all of them in the last minute
        assert sum(hook["problems_per_bucket"]) == hook["blocked"] + hook["errors"]
        assert 0 <= hook["p50_ms"] <= hook["p95_ms"]
        assert hook["p95_per_step"][-1] == hook["p95_ms"]
        assert hook["p95_per_step"][:-1] == [None] * 11
    assert audit_["p50_ms"] >= 2  # it sleeps 2 ms


async def test_the_charts_are_svg_whose_text_is_escaped(client: httpx.AsyncClient) -> None:
    hook = by_name((await client.get("/processes/desk/hooks/stats")).json())["audit <b>"]
    runs = ET.fromstring(hook["runs_svg"])
    assert runs.tag == f"{SVG}svg"
    assert "<b>" not in hook["runs_svg"]  # the name is text, not markup
    title = runs.find(f"{SVG}title")
    assert title is not None
    assert title.text is not None
    assert title.text.startswith("audit <b>: 4 runs in the last 1 h (0 blocked, 0 failed)")
    assert len(runs.findall(f"{SVG}rect[@class='runs']")) == 1  # one minute had runs
    durations = ET.fromstring(hook["duration_svg"])
    # One five-minute step had runs: a point per line, not a line.
    assert {c.get("class") for c in durations.findall(f"{SVG}circle")} == {"p50", "p95"}
    broken = by_name((await client.get("/processes/desk/hooks/stats")).json())["breaks"]
    assert len(ET.fromstring(broken["runs_svg"]).findall(f"{SVG}rect[@class='problems']")) == 1


@pytest.mark.parametrize("window", ["10", "86401", "abc", "-60", "3600.5", ""])
async def test_a_window_out_of_range_is_refused_naming_it(
    client: httpx.AsyncClient, window: str
) -> None:
    r = await client.get("/processes/desk/hooks/stats", params={"window": window})
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "INVALID_QUERY"
    assert "window" in r.json()["error"]["message"]
    assert "60 to 86400" in r.json()["error"]["message"]


async def test_an_unknown_process_or_parameter_is_refused(client: httpx.AsyncClient) -> None:
    assert (await client.get("/processes/nobody/hooks/stats")).status_code == 404
    r = await client.get("/processes/desk/hooks/stats", params={"windw": "60"})
    assert r.status_code == 400


def run(at: float, outcome: str, ms: float, hook: str = "h1") -> HookRun:
    return HookRun(
        recorded_at=at,
        hook_id=hook,
        hook_name=hook,
        event="user_prompt_submit",
        process_id="p",
        source="code",
        mode="sync",
        outcome=outcome,
        duration_ms=ms,
        error=None,
        patch_applied=False,
        dispatch_id="d",
        dispatch_depth=0,
    )


def test_runs_fall_in_their_minute_and_percentiles_are_nearest_rank() -> None:
    now = 1_000_000.0
    runs = [
        run(now - 3599, "passed", 1.0),  # the first minute
        run(now - 3601, "passed", 99.0),  # before the window: not counted
        *(run(now - 30, "passed", float(ms)) for ms in range(1, 19)),  # 1..18 ms
        run(now - 30, "blocked", 19.0),
        run(now - 30, "timed_out", 20.0),
        run(now - 30, "skipped", 0.0),  # its matcher did not match: it did not run
        run(now - 600, "failed", 5.0, hook="h2"),
    ]
    h1, h2 = hook_stats(runs, now=now)
    assert (h1["hook_id"], h2["hook_id"]) == ("h1", "h2")
    assert h1["runs"] == 21
    assert h1["per_bucket"][0] == 1
    assert h1["per_bucket"][-1] == 20
    assert h1["problems_per_bucket"][-1] == 2
    assert (h1["p50_ms"], h1["p95_ms"]) == (10.0, 19.0)  # ranks 11 and 20 of 21
    assert (h1["block_rate"], h1["error_rate"]) == (1 / 21, 1 / 21)
    assert h1["p50_per_step"][0] == 1.0
    assert h1["p50_per_step"][1:11] == [None] * 10
    assert (h2["runs"], h2["error_rate"], h2["per_bucket"][50]) == (1, 1.0, 1)
    assert hook_stats([], now=now) == []
