"""pre_model_call and post_model_call: fired around every model call of a real process on
FakeLLM, with rewrites of the request and the response, answers instead of the model, blocks,
and declared secrets kept from the hooks."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest

from _process_support import Recorder, run_task
from tether import AgentProcess, ProcessConfig
from tether.agent import InvalidModelCallRewrite, ModelPrice
from tether.hooks import HookBlocked, HookContext, HookErrorInfo, HookEvent
from tether.testing import FakeLLM

MODEL = "gpt-4o"
PRICES = {
    MODEL: ModelPrice(input=2.5, output=10.0),
    "gpt-4o-mini": ModelPrice(input=0.15, output=0.6, cached=0.075),
}
EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")


def process_on(llm: FakeLLM, *tools: Any, **config: Any) -> AgentProcess:
    """A process whose model is FakeLLM's ``gpt-4o`` (priced unless ``pricing`` says else)."""
    config.setdefault("pricing", PRICES)
    return AgentProcess(
        "triage",
        ProcessConfig(model=f"openai:{MODEL}", base_url=llm.base_url, tools=list(tools), **config),
    )


def record(process: AgentProcess) -> Recorder:
    return Recorder().attach(
        process.hooks,
        HookEvent.PRE_MODEL_CALL,
        HookEvent.POST_MODEL_CALL,
        HookEvent.TASK_COMPLETED,
        HookEvent.PERMISSION_DENIED,
        priority=-1000,  # after the hooks under test: what they left
    )


async def run_one(process: AgentProcess, text: str = "Login is down") -> tuple[Recorder, str]:
    rec = record(process)
    async with process:
        event_id = await run_task(process, rec, text)
    return rec, event_id


def errors_of(process: AgentProcess) -> list[BaseException]:
    found: list[BaseException] = []

    def listener(info: HookErrorInfo) -> None:
        found.append(info.error)

    process.hooks.on_error(listener)
    return found


def sent_messages(llm: FakeLLM, index: int = 0) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = llm.requests[index]["messages"]
    return messages


async def lookup_order(order_id: str) -> dict[str, Any]:
    """Look an order up."""
    return {"order": order_id, "status": "shipped"}


# -- what the hooks see ------------------------------------------------------------------------


async def test_pre_model_call_carries_the_request_as_it_will_be_sent(llm: FakeLLM) -> None:
    process = process_on(llm, lookup_order)
    rec, event_id = await run_one(process, "Where is order A-1?")
    [pre] = rec.of(HookEvent.PRE_MODEL_CALL)
    assert (pre["model"], pre["provider"], pre["turn"], pre["event_id"]) == (
        MODEL,
        "openai",
        1,
        event_id,
    )
    assert pre["messages"] == sent_messages(llm)
    assert [t["function"]["name"] for t in pre["tools"]] == ["lookup_order"]
    assert pre["tools"] == llm.requests[0]["tools"]
    assert pre["params"] == {}
    assert pre["usage_so_far"]["model_calls"] == 0


async def test_post_model_call_carries_the_response_usage_and_cost_of_the_call(
    llm: FakeLLM,
) -> None:
    llm.reply = "P2, web team."
    rec, _ = await run_one(process_on(llm))
    [post] = rec.of(HookEvent.POST_MODEL_CALL)
    assert post["response"] == {
        "content": "P2, web team.",
        "tool_calls": [],
        "finish_reason": "stop",
    }
    assert post["source"] == "model"
    assert post["error"] is None
    assert post["duration_ms"] >= 0
    prompt_words = sum(len(m["content"].split()) for m in sent_messages(llm))
    assert post["usage"] == {"input_tokens": prompt_words, "output_tokens": 3, "cached_tokens": 0}
    assert post["cost"] == pytest.approx((prompt_words * 2.5 + 3 * 10.0) / 1e6)
    assert post["run_usage"]["total_tokens"] == prompt_words + 3
    assert post["process_usage"]["model_calls"] == 1
    [done] = rec.of(HookEvent.TASK_COMPLETED)
    assert done["run_usage"] == post["run_usage"]
    assert done["process_usage"]["cost"] == pytest.approx(post["cost"])


async def test_a_model_the_pricing_does_not_name_costs_none_never_a_guess(llm: FakeLLM) -> None:
    process = process_on(llm, pricing={})
    rec, _ = await run_one(process)
    [post] = rec.of(HookEvent.POST_MODEL_CALL)
    assert post["cost"] is None
    assert post["usage"]["input_tokens"] > 0
    assert post["run_usage"]["unpriced_calls"] == 1
    assert process.status()["usage"]["cost"] == 0.0
    assert process.status()["usage"]["unpriced_calls"] == 1


async def test_the_matcher_selects_model_calls_by_model_and_provider(llm: FakeLLM) -> None:
    process = process_on(llm)
    seen: list[str] = []

    async def mini_only(ctx: HookContext) -> None:
        seen.append(ctx.data["model"])

    process.hooks.register(HookEvent.PRE_MODEL_CALL, mini_only, matcher={"model": "gpt-4o-mini"})
    process.hooks.register(HookEvent.POST_MODEL_CALL, mini_only, matcher={"provider": "openai"})
    await run_one(process)
    assert seen == [MODEL]  # the post hook only


# -- rewriting the request ---------------------------------------------------------------------


async def test_a_rewritten_request_is_what_the_model_received(llm: FakeLLM) -> None:
    process = process_on(llm)

    async def redact_emails(ctx: HookContext) -> None:
        ctx.set(
            "messages",
            [
                {**m, "content": EMAIL.sub("[email]", m["content"])}
                if isinstance(m.get("content"), str)
                else m
                for m in ctx.data["messages"]
            ],
        )
        ctx.set("params", {"temperature": 0})
        ctx.set("model", "gpt-4o-mini")

    process.hooks.register(HookEvent.PRE_MODEL_CALL, redact_emails)
    await run_one(process, "ticket from ana@example.com: login is down")
    [request] = llm.requests
    assert "ana@example.com" not in json.dumps(request)
    assert "ticket from [email]: login is down" in request["messages"][-1]["content"]
    assert request["temperature"] == 0
    assert request["model"] == "gpt-4o-mini"


async def test_a_switched_model_is_priced_as_the_model_that_answered(llm: FakeLLM) -> None:
    process = process_on(llm)

    async def pin(ctx: HookContext) -> None:
        ctx.set("model", "gpt-4o-mini")

    process.hooks.register(HookEvent.PRE_MODEL_CALL, pin)
    rec, _ = await run_one(process)
    [post] = rec.of(HookEvent.POST_MODEL_CALL)
    assert post["model"] == "gpt-4o-mini"
    tokens = post["usage"]
    assert post["cost"] == pytest.approx(
        (tokens["input_tokens"] * 0.15 + tokens["output_tokens"] * 0.6) / 1e6
    )


async def test_an_unknown_model_is_the_hooks_error_and_the_runs_model_is_called(
    llm: FakeLLM,
) -> None:
    process = process_on(llm)
    errors = errors_of(process)

    async def typo(ctx: HookContext) -> None:
        ctx.set("model", "gpt-4o-mimi")

    process.hooks.register(HookEvent.PRE_MODEL_CALL, typo)
    rec, _ = await run_one(process)
    assert rec.outcomes() == ["success"]
    assert llm.requests[0]["model"] == MODEL
    [error] = errors
    assert isinstance(error, InvalidModelCallRewrite)
    assert "unknown model 'gpt-4o-mimi'" in str(error)
    assert "gpt-4o-mini" in str(error)  # what is allowed


async def test_a_malformed_message_is_the_hooks_error_and_the_original_is_sent(
    llm: FakeLLM,
) -> None:
    process = process_on(llm)
    errors = errors_of(process)

    async def broken(ctx: HookContext) -> None:
        ctx.set("messages", [{"role": "wizard", "content": "hi"}])

    process.hooks.register(HookEvent.PRE_MODEL_CALL, broken)
    rec, _ = await run_one(process, "Login is down")
    assert rec.outcomes() == ["success"]
    assert "Login is down" in sent_messages(llm)[-1]["content"]
    [error] = errors
    assert "messages[0].role is 'wizard'; allowed: assistant, developer, system, tool, user" in (
        str(error)
    )


async def test_a_rewrite_written_around_the_context_is_checked_after_the_dispatch(
    llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    process = process_on(llm)

    async def around(ctx: HookContext) -> None:
        ctx.data["messages"] = "not a list"

    process.hooks.register(HookEvent.PRE_MODEL_CALL, around)
    rec, _ = await run_one(process, "Login is down")
    assert rec.outcomes() == ["success"]
    assert "Login is down" in sent_messages(llm)[-1]["content"]
    assert "pre_model_call: messages rewritten to str" in caplog.text


# -- answering instead of the model, blocking -------------------------------------------------


async def test_a_hooks_answer_means_the_model_receives_nothing(llm: FakeLLM) -> None:
    process = process_on(llm)

    async def cached(ctx: HookContext) -> None:
        ctx.set("response", "From the cache: P3, known issue.")

    process.hooks.register(HookEvent.PRE_MODEL_CALL, cached)
    rec, event_id = await run_one(process)
    assert llm.requests == []
    assert rec.outcomes() == ["success"]
    assert process.transcripts[event_id][-1]["content"] == "From the cache: P3, known issue."
    [post] = rec.of(HookEvent.POST_MODEL_CALL)
    assert post["source"] == "hook"
    assert post["usage"] == {"input_tokens": 0, "output_tokens": 0, "cached_tokens": 0}
    assert post["run_usage"]["model_calls"] == 0


async def test_a_hooks_answer_may_be_a_tool_call_which_the_loop_runs(llm: FakeLLM) -> None:
    process = process_on(llm, lookup_order)
    answered = False

    async def first_turn(ctx: HookContext) -> None:
        nonlocal answered
        if not answered:
            answered = True
            ctx.set(
                "response",
                {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A-7"}}]},
            )

    process.hooks.register(HookEvent.PRE_MODEL_CALL, first_turn)
    await run_one(process)
    [request] = llm.requests  # the second turn only
    [tool_result] = [m for m in request["messages"] if m["role"] == "tool"]
    assert json.loads(tool_result["content"]) == {"order": "A-7", "status": "shipped"}


async def test_a_blocked_pre_model_call_fails_the_run_as_a_blocked_prompt(llm: FakeLLM) -> None:
    process = process_on(llm)

    async def no_model_today(ctx: HookContext) -> None:
        raise HookBlocked("model calls are frozen during the incident")

    process.hooks.register(HookEvent.PRE_MODEL_CALL, no_model_today)
    rec, event_id = await run_one(process)
    assert llm.requests == []
    assert rec.outcomes() == ["blocked"]
    assert rec.of(HookEvent.TASK_COMPLETED)[0]["error"] == (
        "model calls are frozen during the incident"
    )
    [letter] = process.dead_letters
    assert (letter["event_id"], letter["reason"]) == (event_id, "blocked by hook")


async def test_a_blocked_post_model_call_fails_the_run_with_the_hooks_reason(
    llm: FakeLLM,
) -> None:
    process = process_on(llm)

    async def audit(ctx: HookContext) -> None:
        if "refund" in (ctx.data["response"]["content"] or ""):
            raise HookBlocked("the model promised a refund")

    llm.reply = "We will refund you."
    process.hooks.register(HookEvent.POST_MODEL_CALL, audit)
    rec, _ = await run_one(process)
    assert rec.outcomes() == ["blocked"]
    assert rec.of(HookEvent.TASK_COMPLETED)[0]["error"] == "the model promised a refund"


# -- rewriting the response --------------------------------------------------------------------


async def test_a_rewritten_response_text_is_the_final_answer(llm: FakeLLM) -> None:
    process = process_on(llm)

    async def scrub(ctx: HookContext) -> None:
        response = dict(ctx.data["response"])
        response["content"] = EMAIL.sub("[email]", response["content"])
        ctx.set("response", response)

    llm.reply = "Escalated to bob@example.com today."
    process.hooks.register(HookEvent.POST_MODEL_CALL, scrub)
    _, event_id = await run_one(process)
    assert process.transcripts[event_id][-1]["content"] == "Escalated to [email] today."
    assert process.context.conversation.recent()[-1]["content"] == "Escalated to [email] today."


async def test_a_rewritten_tool_call_is_what_the_tool_ran_with(llm: FakeLLM) -> None:
    ran: list[str] = []

    async def lookup(order_id: str) -> str:
        """Look an order up."""
        ran.append(order_id)
        return "shipped"

    llm.tool_calls = [("lookup", {"order_id": "A-1"})]
    process = process_on(llm, lookup)

    async def policy(ctx: HookContext) -> None:
        response = ctx.data["response"]
        if response["tool_calls"]:
            call = dict(response["tool_calls"][0], arguments='{"order_id": "A-2"}')
            ctx.set("response", {**response, "tool_calls": [call]})

    process.hooks.register(HookEvent.POST_MODEL_CALL, policy)
    await run_one(process)
    assert ran == ["A-2"]
    assistant = next(m for m in sent_messages(llm, 1) if m["role"] == "assistant")
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"order_id": "A-2"}'


async def test_post_model_call_fires_on_a_failed_call_with_the_error(llm: FakeLLM) -> None:
    llm.errors = [400]
    rec, _ = await run_one(process_on(llm, max_retries=0))
    [post] = rec.of(HookEvent.POST_MODEL_CALL)
    assert post["response"] is None
    assert post["cost"] is None
    assert "HTTP 400" in post["error"]
    assert rec.outcomes() == ["failed"]


# -- secrets -----------------------------------------------------------------------------------


async def test_secrets_never_reach_a_model_hook_but_reach_the_model(llm: FakeLLM) -> None:
    process = process_on(llm, secrets={"crm_key": "crm-7f3a9e"})
    seen: list[str] = []

    async def look(ctx: HookContext) -> None:
        seen.append(json.dumps(ctx.data))

    process.hooks.register(HookEvent.PRE_MODEL_CALL, look)
    process.hooks.register(HookEvent.POST_MODEL_CALL, look)
    llm.reply = "Use key crm-7f3a9e to log in."
    _, event_id = await run_one(process, "The CRM key crm-7f3a9e fails")
    assert all("crm-7f3a9e" not in text for text in seen)
    assert "[REDACTED:crm_key]" in seen[0]
    assert "[REDACTED:crm_key]" in seen[1]
    assert "crm-7f3a9e" in sent_messages(llm)[-1]["content"]  # unchanged: the real value
    assert process.transcripts[event_id][-1]["content"] == "Use key crm-7f3a9e to log in."


async def test_a_message_a_hook_did_not_change_keeps_its_secret_when_another_changed(
    llm: FakeLLM,
) -> None:
    process = process_on(llm, secrets={"crm_key": "crm-7f3a9e"}, instructions="Triage tickets.")

    async def reword_system(ctx: HookContext) -> None:
        messages = list(ctx.data["messages"])
        messages[0] = {"role": "system", "content": "Triage tickets briefly."}
        ctx.set("messages", messages)

    process.hooks.register(HookEvent.PRE_MODEL_CALL, reword_system)
    await run_one(process, "The CRM key crm-7f3a9e fails")
    sent = sent_messages(llm)
    assert sent[0]["content"] == "Triage tickets briefly."
    assert "crm-7f3a9e" in sent[-1]["content"]


# -- hooks as users write them -----------------------------------------------------------------


async def test_a_model_hook_asks_a_policy_service_over_httpx_which_model_to_use(
    llm: FakeLLM,
) -> None:
    """The policy service here is FakeLLM's model list: the hook pins the first listed model
    that the process prices, falling back to the run's."""
    process = process_on(llm, pricing={**PRICES, "fake-llm": ModelPrice(input=0, output=0)})

    async def pin_by_policy(ctx: HookContext) -> None:
        async with httpx.AsyncClient(base_url=llm.base_url, timeout=5) as client:
            listed = (await client.get("/models")).json()["data"]
        ctx.set("model", listed[0]["id"])

    process.hooks.register(HookEvent.PRE_MODEL_CALL, pin_by_policy)
    rec, _ = await run_one(process)
    assert llm.requests[0]["model"] == "fake-llm"
    assert rec.of(HookEvent.POST_MODEL_CALL)[0]["cost"] == 0.0


async def test_a_command_hook_answers_instead_of_the_model(llm: FakeLLM, make_script: Any) -> None:
    from tether.hooks import HookConfig

    script = make_script(
        "import json, sys\n"
        "envelope = json.load(sys.stdin)\n"
        "data = envelope['data']\n"
        "data['response'] = {'content': 'answered by ' + data['provider'] + ' policy'}\n"
        "print(json.dumps({'data': data}))\n"
    )
    process = process_on(llm, hooks=[HookConfig(event="pre_model_call", command=script)])
    _, event_id = await run_one(process)
    assert llm.requests == []
    assert process.transcripts[event_id][-1]["content"] == "answered by openai policy"


# -- who listens ---------------------------------------------------------------------------


async def test_a_model_hook_registered_while_the_process_runs_fires_at_the_next_call(
    llm: FakeLLM,
) -> None:
    process = process_on(llm)
    rec = record(process)
    seen: list[int] = []

    async def look(ctx: HookContext) -> None:
        seen.append(ctx.data["turn"])

    async with process:
        await run_task(process, rec)
        process.hooks.register(HookEvent.PRE_MODEL_CALL, look)
        await run_task(process, rec)
    assert seen == [1]


async def test_a_shared_model_hook_of_the_runtime_fires_for_its_processes(llm: FakeLLM) -> None:
    from tether import AgentRuntime, HookManager, TriggerEvent

    shared = HookManager()
    models: list[str] = []

    async def audit(ctx: HookContext) -> None:
        models.append(f"{ctx.process_id}: {ctx.data['provider']}:{ctx.data['model']}")

    shared.register(HookEvent.POST_MODEL_CALL, audit)
    runtime = AgentRuntime(hooks=shared)
    await runtime.start_all()
    try:
        process = await runtime.add_process(
            "triage", {"model": f"openai:{MODEL}", "base_url": llm.base_url}
        )
        await process.inject(TriggerEvent("cli", "manual", {"ticket": "Login is down"}))
        from _process_support import eventually

        await eventually(lambda: models == [f"triage: openai:{MODEL}"], what="the audit")
    finally:
        await runtime.stop_all()


async def test_a_spawned_childs_model_calls_fire_the_parents_model_hooks(llm: FakeLLM) -> None:
    from _process_support import eventually, ticket

    llm.tool_calls = [("spawn_process", {"name": "bugs", "instructions": "You file bugs."})]
    process = process_on(llm, execution_mode="open")
    calls: list[str] = []

    async def look(ctx: HookContext) -> None:
        calls.append(ctx.process_id)

    process.hooks.register(HookEvent.PRE_MODEL_CALL, look)
    rec = record(process)
    async with process:
        await run_task(process, rec)
        child = process.children["bugs"]
        await child.inject(ticket("Checkout button does nothing"))
        await eventually(lambda: calls.count("bugs") == 1, what="the child's model call")
    assert calls == ["triage", "triage", "bugs"]


async def test_a_model_hooks_runs_are_in_the_history_and_a_dry_run_traces_its_block(
    llm: FakeLLM,
) -> None:
    from tether.cli._samples import sample_data

    process = process_on(llm)

    async def frozen(ctx: HookContext) -> None:
        if ctx.data["model"] != MODEL:
            raise HookBlocked("only gpt-4o here")

    process.hooks.register(HookEvent.PRE_MODEL_CALL, frozen)
    await run_one(process)
    [run] = [r for r in process.hook_runs(event="pre_model_call") if "frozen" in r.hook_name]
    assert run.outcome == "passed"
    trace = await process.dry_run("pre_model_call", sample_data("pre_model_call"))
    assert (trace["decision"], trace["reason"]) == ("blocked", "only gpt-4o here")


async def test_a_rewritten_tool_offer_is_what_the_model_was_offered(llm: FakeLLM) -> None:
    async def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        return "cancelled"

    process = process_on(llm, lookup_order, cancel_order)

    async def read_only(ctx: HookContext) -> None:
        ctx.set("tools", [t for t in ctx.data["tools"] if t["function"]["name"] != "cancel_order"])

    process.hooks.register(HookEvent.PRE_MODEL_CALL, read_only)
    await run_one(process)
    assert [t["function"]["name"] for t in llm.requests[0]["tools"]] == ["lookup_order"]


async def test_params_for_a_model_that_takes_none_are_the_hooks_error() -> None:
    from tether.models import ModelReply

    class Plain:
        name = "plain"
        calls: list[Any] = []

        async def complete(self, messages: Any, tools: Any = None) -> ModelReply:
            self.calls.append(messages)
            return ModelReply(content="P2.")

        async def aclose(self) -> None:
            pass

    process = AgentProcess("triage", ProcessConfig(model=Plain()))
    errors = errors_of(process)

    async def tune(ctx: HookContext) -> None:
        ctx.set("params", {"temperature": 0})

    process.hooks.register(HookEvent.PRE_MODEL_CALL, tune)
    rec, _ = await run_one(process)
    assert rec.outcomes() == ["success"]
    assert len(Plain.calls) == 1
    [error] = errors
    assert "model 'plain' takes no params" in str(error)


async def test_a_command_hooks_malformed_messages_are_its_error_and_the_original_is_sent(
    llm: FakeLLM, make_script: Any
) -> None:
    from tether.hooks import HookConfig

    script = make_script(
        "import json, sys\n"
        "data = json.load(sys.stdin)['data']\n"
        "data['messages'] = [{'role': 'user'}, 'not a message']\n"
        "print(json.dumps({'data': data}))\n"
    )
    process = process_on(llm, hooks=[HookConfig(event="pre_model_call", command=script)])
    errors = errors_of(process)
    rec, _ = await run_one(process, "Login is down")
    assert rec.outcomes() == ["success"]
    assert "Login is down" in sent_messages(llm)[-1]["content"]
    [error] = errors
    assert "messages[1] is a str, not an object" in str(error)
