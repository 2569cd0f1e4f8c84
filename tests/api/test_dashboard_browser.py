"""The dashboard in a real headless Chromium (Debian's, driven by Playwright): the page
loads, shows a process, and a hook run appears live after an inject; its switches and
buttons act through the API. Each run writes its screenshot to bench/out/dashboard.png (ignored
by git, so a test run leaves the tracked tree as it was), and to docs/dashboard.png when
TETHER_UPDATE_SCREENSHOT=1.

Skipped only when Chromium or Playwright is missing and CI is unset; under CI a missing
browser fails (``.ci/setup-browser`` installs it).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from _process_support import eventually
from tether import (
    AgentRuntime,
    EventTrigger,
    HookBlocked,
    HookEvent,
    HookManager,
    ProcessConfig,
    TriggerEvent,
)
from tether.api import OrchestrationAPI
from tether.models import ScriptedModel

if TYPE_CHECKING:
    from playwright.async_api import Browser, Page

pytestmark = pytest.mark.slow

CHROMIUM = os.environ.get("TETHER_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ROOT = Path(__file__).resolve().parents[2]
DOCS_SCREENSHOT = ROOT / "docs" / "dashboard.png"
BENCH_SCREENSHOT = ROOT / "bench" / "out" / "dashboard.png"
TOKEN = "dash-token-123"


def _missing() -> str | None:
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[dev]')"
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        return f"Chromium is not installed at {CHROMIUM} (run .ci/setup-browser)"
    return None


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    missing = _missing()
    if missing is not None:
        if os.environ.get("CI", "").lower() in ("", "0", "false"):
            pytest.skip(missing)
        pytest.fail(f"CI is set but the browser test cannot run: {missing}")
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        await browser.close()


async def audit(ctx: Any) -> None:
    return None


async def refuse_spam(ctx: Any) -> None:
    if ctx.data.get("trigger_id") == "spam":
        raise HookBlocked("spam is not accepted")


@pytest.fixture
async def served() -> AsyncIterator[tuple[AgentRuntime, OrchestrationAPI]]:
    runtime = AgentRuntime(hooks=HookManager())
    async with runtime:
        spam = EventTrigger(id="spam", event_type="spam")
        config = ProcessConfig(model=ScriptedModel(), triggers=[spam])
        process = await runtime.add_process("support-desk", config)
        process.hooks.on(HookEvent.USER_PROMPT_SUBMIT, name="audit-prompt")(audit)
        process.hooks.on(HookEvent.TASK_CREATED, name="refuse-spam")(refuse_spam)
        runtime.hooks.on(HookEvent.TASK_COMPLETED, name="shared-audit")(audit)
        async with OrchestrationAPI(runtime, port=0, webhooks=False) as api:
            yield runtime, api


async def open_dashboard(browser: Browser, url: str) -> Page:
    page = await browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    await page.goto(url + "/")
    await page.wait_for_selector("body[data-feed='live']", timeout=10_000)
    assert errors == []
    return page


async def test_the_dashboard_shows_a_process_and_a_hook_run_appears_live_after_an_inject(
    browser: Browser, served: tuple[AgentRuntime, OrchestrationAPI]
) -> None:
    _, api = served
    page = await open_dashboard(browser, api.url)
    row = page.locator("#processes tbody tr[data-process='support-desk']")
    await row.wait_for(timeout=10_000)
    assert "running" in await row.inner_text()
    # Its hooks as the catalog lists them: two of its own and the runtime's shared one.
    assert (await row.locator("td").nth(7).inner_text()).strip() == "3 (1 shared)"
    assert (await row.locator("td").last.inner_text()).strip() == "-"  # no model call yet
    async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
        await client.post("/processes/support-desk/inject", json={"payload": {"ticket": 42}})
        await client.post(
            "/processes/support-desk/inject", json={"payload": {}, "trigger_id": "spam"}
        )
    live = page.locator("#feed tbody tr", has_text="audit-prompt")
    await live.first.wait_for(timeout=10_000)
    assert "user_prompt_submit" in await live.first.inner_text()
    blocked = page.locator("#feed tbody tr[data-outcome='blocked']", has_text="refuse-spam")
    await blocked.first.wait_for(timeout=10_000)
    dead = page.locator("#dead-letters tbody tr", has_text="blocked by hook")
    await dead.first.wait_for(timeout=10_000)
    # Its redeliver button is in view inside the panel (a long error wraps, not pushes it out).
    button = await dead.first.locator("button").bounding_box()
    panel = await page.locator("#dead-letters").locator("xpath=ancestor::section").bounding_box()
    assert button is not None
    assert panel is not None
    assert button["x"] + button["width"] <= panel["x"] + panel["width"]
    await page.locator("#catalog tbody tr", has_text="shared-audit (shared)").wait_for()
    await live.first.locator("a.task").click()
    await page.locator("#timeline li", has_text="audit-prompt").first.wait_for(timeout=10_000)
    # The picture shows the hook charts too (drawn at the next poll after the runs).
    await page.locator("#charts tbody tr svg.runs rect.problems").first.wait_for(timeout=10_000)
    shot = BENCH_SCREENSHOT
    shot.parent.mkdir(exist_ok=True)
    await page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    if os.environ.get("TETHER_UPDATE_SCREENSHOT") == "1":
        DOCS_SCREENSHOT.write_bytes(shot.read_bytes())


async def test_the_hook_charts_draw_each_hooks_last_hour(
    browser: Browser, served: tuple[AgentRuntime, OrchestrationAPI]
) -> None:
    _, api = served
    page = await open_dashboard(browser, api.url)
    async with httpx.AsyncClient(base_url=f"{api.url}/api/v1") as client:
        for trigger in ("manual", "spam", "spam"):
            body = {"payload": {}, **({"trigger_id": "spam"} if trigger == "spam" else {})}
            await client.post("/processes/support-desk/inject", json=body)
    refused = page.locator("#charts tbody tr", has_text="refuse-spam")
    await refused.wait_for(timeout=10_000)
    await page.wait_for_function(
        "() => [...document.querySelectorAll('#charts tbody tr')]"
        ".some((tr) => tr.innerText.includes('refuse-spam') && tr.innerText.includes('67 %'))",
        timeout=10_000,
    )
    cells = await refused.locator("td").all_inner_texts()
    assert cells[:3] == ["task_created", "refuse-spam", "3"]
    assert cells[5] == "67 %"  # two of its three runs blocked
    # The two charts are real SVG in the page: the bars of the minute, the refusals over them.
    assert await refused.locator("svg.hook-chart.runs rect.runs").count() == 1
    assert await refused.locator("svg.hook-chart.runs rect.problems").count() == 1
    assert await refused.locator("svg.hook-chart.durations circle.p95").count() == 1
    box = await refused.locator("svg.hook-chart.runs").bounding_box()
    assert box is not None
    assert (box["width"], box["height"]) == (240, 40)


async def test_the_feed_filter_shows_only_the_chosen_outcome(
    browser: Browser, served: tuple[AgentRuntime, OrchestrationAPI]
) -> None:
    runtime, api = served
    page = await open_dashboard(browser, api.url)
    await page.select_option("#f-outcome", "blocked")
    await page.wait_for_selector("body[data-feed='live']", timeout=10_000)
    process = runtime.get("support-desk")
    assert process is not None
    await process.inject(TriggerEvent("cli", "manual", {}))
    await process.inject(TriggerEvent("spam", "manual", {}))
    await page.locator("#feed tbody tr[data-outcome='blocked']").first.wait_for(timeout=10_000)
    outcomes = await page.locator("#feed tbody tr").evaluate_all(
        "rows => rows.map(r => r.dataset.outcome)"
    )
    assert set(outcomes) == {"blocked"}


async def test_a_catalog_switch_disables_a_hook_and_redeliver_injects_a_dead_letter(
    browser: Browser, served: tuple[AgentRuntime, OrchestrationAPI]
) -> None:
    runtime, api = served
    process = runtime.get("support-desk")
    assert process is not None
    await process.inject(TriggerEvent("spam", "manual", {}))
    page = await open_dashboard(browser, api.url)
    switch = page.locator("#catalog tbody tr", has_text="refuse-spam").locator("input")
    await switch.wait_for(timeout=10_000)
    await switch.uncheck()
    await eventually(
        lambda: not any(h.enabled for h in process.hooks.describe() if h.name == "refuse-spam")
    )
    button = page.locator("#dead-letters tbody tr", has_text="blocked by hook").locator("button")
    await button.click(timeout=10_000)
    await eventually(lambda: process.status()["invocation_count"] == 1, what="the redelivery")


async def test_with_a_token_the_page_asks_for_it_and_then_shows_the_runtime(
    browser: Browser,
) -> None:
    runtime = AgentRuntime()
    async with runtime:
        await runtime.add_process("guarded", ProcessConfig(model=ScriptedModel()))
        async with OrchestrationAPI(runtime, port=0, webhooks=False, token=TOKEN) as api:
            page = await browser.new_page()
            await page.goto(api.url + "/")
            await page.locator("#token-form").wait_for(state="visible", timeout=10_000)
            assert await page.locator("#processes tbody tr").count() == 0
            await page.fill("#token", TOKEN)
            await page.click("#token-form button")
            await page.locator("#processes tbody tr[data-process='guarded']").wait_for(
                timeout=10_000
            )


async def test_the_feed_shows_what_a_claude_code_hook_tells_the_operator_under_its_run(
    browser: Browser, tmp_path: Path
) -> None:
    from tether import HookConfig

    program = tmp_path / "notice.sh"
    program.write_text(
        '#!/bin/sh\ncat >/dev/null\necho \'{"systemMessage": "routed to the night shift"}\'\n'
    )
    program.chmod(0o755)
    hook = HookConfig(
        event="user_prompt_submit", command=[str(program)], protocol="claude-code", name="router"
    )
    runtime = AgentRuntime(hooks=HookManager())
    async with runtime:
        process = await runtime.add_process(
            "desk", ProcessConfig(model=ScriptedModel(), hooks=[hook])
        )
        async with OrchestrationAPI(runtime, port=0, webhooks=False) as api:
            page = await open_dashboard(browser, api.url)
            await process.inject(TriggerEvent("cli", "manual", {}))
            notice = page.locator("#feed tbody td.notice")
            await notice.wait_for(timeout=10_000)
            assert await notice.inner_text() == "router: routed to the night shift"
            # Under its run: the row before it is the hook's.
            run = page.locator("#feed tbody tr:has(td.notice)").locator(
                "xpath=preceding-sibling::tr[1]"
            )
            assert "router" in await run.inner_text()
            await run.locator("a.task").click()
            step = page.locator("#timeline li", has_text="router")
            await step.wait_for(timeout=10_000)
            assert (await step.inner_text()).endswith("· routed to the night shift")


async def test_the_approvals_panel_lists_a_pending_call_and_its_buttons_answer_it(
    browser: Browser,
) -> None:
    from tether import ApprovalPolicy
    from tether.agent import tool

    refunded: list[int] = []

    @tool
    async def refund(amount: int) -> str:
        """Refund the customer."""
        refunded.append(amount)
        return f"refunded {amount}"

    model = ScriptedModel(reply="Handled.", tool_calls=[("refund", {"amount": 5})])
    config = ProcessConfig(
        model=model,
        tools=[refund],
        approval=ApprovalPolicy(tools=["refund"], operator=True, timeout=60),
    )
    runtime = AgentRuntime()
    async with runtime:
        process = await runtime.add_process("payments", config)
        async with OrchestrationAPI(runtime, port=0, webhooks=False) as api:
            page = await open_dashboard(browser, api.url)
            await process.inject(TriggerEvent("desk", "manual", {"ticket": "refund 5"}))
            asked = page.locator("#approvals tbody tr", has_text="refund")
            await asked.wait_for(timeout=10_000)
            cells = await asked.locator("td").all_inner_texts()
            assert cells[:2] == ["payments", "refund"]
            assert '"amount": 5' in cells[2]  # what it asks
            assert "1 waiting" in await page.locator("#approvals-state").inner_text()
            await asked.locator("button.approve").click()
            await eventually(lambda: refunded == [5], what="the approved call")
            await asked.wait_for(state="detached", timeout=10_000)
            # Denied: the call is not run, the run goes on with the refusal.
            model.tool_calls.append(("refund", {"amount": 9}))
            await process.inject(TriggerEvent("desk", "manual", {"ticket": "refund 9"}))
            second = page.locator("#approvals tbody tr", has_text='"amount": 9')
            await second.locator("button.deny").click(timeout=10_000)
            await second.wait_for(state="detached", timeout=10_000)
            await eventually(lambda: process.status()["invocation_count"] == 2, what="the runs")
            assert process.pending_approvals == []
    assert refunded == [5]
