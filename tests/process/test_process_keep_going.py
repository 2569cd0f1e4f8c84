"""agent_stop: fired before a run ends with its final answer; a block sends its reason to the
model as the next user message, at most ``max_continuations`` times a run. And matchers on a
tool call's arguments (``arguments.command``), which spawn no command for other calls.
All through a running process on FakeLLM."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from _process_support import completions, run_task
from conftest import ScriptFactory
from tether import AgentProcess, HookBlocked, HookConfig, HookContext, HookEvent, ProcessConfig
from tether.testing import FakeLLM

pytestmark = pytest.mark.llm(openai_env=True)


def user_texts(llm: FakeLLM, request: int) -> list[str]:
    return [m["content"] for m in llm.requests[request]["messages"] if m["role"] == "user"]


def process_with(*hooks: HookConfig, **config: Any) -> AgentProcess:
    return AgentProcess(
        "writer", ProcessConfig(model="openai:gpt-5-mini", hooks=list(hooks), **config)
    )


async def one_run(process: AgentProcess) -> list[dict[str, Any]]:
    rec = completions(process)
    async with process:
        await run_task(process, rec, "Write the release note")
    return rec.of(HookEvent.TASK_COMPLETED)


async def test_a_blocked_agent_stop_sends_its_reason_to_the_model_and_the_run_goes_on(
    llm: FakeLLM,
) -> None:
    llm.replies = ["Draft.", "Final note, with the changelog."]
    seen: list[dict[str, Any]] = []

    async def want_changelog(ctx: HookContext) -> None:
        seen.append(dict(ctx.data))
        if "changelog" not in ctx.data["answer"]:
            raise HookBlocked("Add the changelog before you finish.")

    done = await one_run(process_with(HookConfig(event="agent_stop", callback=want_changelog)))
    assert done[0]["outcome"] == "success"
    assert len(llm.requests) == 2
    assert user_texts(llm, 1)[-1] == "Add the changelog before you finish."
    second = llm.requests[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": "Draft."}
    assert [(s["answer"], s["turns"], s["continuations"]) for s in seen] == [
        ("Draft.", 1, 0),
        ("Final note, with the changelog.", 2, 1),
    ]


async def test_agent_stop_carries_the_usage_of_the_run_so_far(llm: FakeLLM) -> None:
    llm.replies = ["one two three"]
    seen: list[dict[str, Any]] = []

    async def look(ctx: HookContext) -> None:
        seen.append(dict(ctx.data))

    await one_run(process_with(HookConfig(event="agent_stop", callback=look)))
    usage = seen[0]["usage"]
    assert usage["output_tokens"] == 3  # FakeLLM counts words
    assert usage["input_tokens"] > 0
    assert usage["model_calls"] == 1
    assert seen[0]["event_id"]


async def test_continuations_stop_at_max_continuations_and_the_further_block_is_ignored(
    llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    async def never_done(ctx: HookContext) -> None:
        raise HookBlocked("Not done yet.")

    process = process_with(
        HookConfig(event="agent_stop", callback=never_done, name="nag"), max_continuations=2
    )
    with caplog.at_level(logging.WARNING, logger="tether.agent"):
        done = await one_run(process)
    assert done[0]["outcome"] == "success"
    assert len(llm.requests) == 3  # the answer, then two continuations
    assert user_texts(llm, 2)[-2:] == ["Not done yet.", "Not done yet."]
    runs = process.hook_runs(hook="nag")
    assert [r.outcome for r in runs] == ["blocked", "blocked", "blocked"]  # the third: recorded
    assert "past max_continuations=2; ignored" in caplog.text


async def test_a_continuation_has_its_own_turn_even_when_the_answer_came_at_max_turns(
    llm: FakeLLM,
) -> None:
    blocks = [HookBlocked("Once more.")]

    async def once(ctx: HookContext) -> None:
        if blocks:
            raise blocks.pop()

    done = await one_run(process_with(HookConfig(event="agent_stop", callback=once), max_turns=1))
    assert done[0]["outcome"] == "success"
    assert len(llm.requests) == 2


async def test_max_continuations_zero_ignores_every_block(llm: FakeLLM) -> None:
    async def nag(ctx: HookContext) -> None:
        raise HookBlocked("Not done yet.")

    process = process_with(HookConfig(event="agent_stop", callback=nag), max_continuations=0)
    await one_run(process)
    assert len(llm.requests) == 1


def test_max_continuations_is_validated_and_defaults_to_three() -> None:
    assert ProcessConfig().max_continuations == 3
    with pytest.raises(ValidationError, match="max_continuations"):
        ProcessConfig(max_continuations=-1)


# -- matchers on a tool call's arguments --------------------------------------------------------


def shell_process(counter: Path, make_script: ScriptFactory, matcher: dict[str, Any]) -> Any:
    """A process with a ``shell`` tool and a command hook on pre_tool_use counting its spawns
    in ``counter``, behind ``matcher``."""
    script = make_script(
        f"""
        import json, sys
        event = json.load(sys.stdin)
        with open({str(counter)!r}, "a") as f:
            f.write(json.dumps(event["data"]["arguments"]) + "\\n")
        print("{{}}")
        """
    )

    async def shell(command: str, paths: list[str] | None = None) -> str:
        """Run a shell command."""
        return f"ran {command}"

    hook = HookConfig(event="pre_tool_use", command=[script], matcher=matcher)
    return AgentProcess(
        "ops", ProcessConfig(model="openai:gpt-5-mini", tools=[shell], hooks=[hook])
    )


def spawned(counter: Path) -> list[dict[str, Any]]:
    if not counter.exists():
        return []
    return [json.loads(line) for line in counter.read_text().splitlines()]


async def test_an_argument_matcher_spawns_the_command_only_for_matching_calls(
    llm: FakeLLM, tmp_path: Path, make_script: ScriptFactory
) -> None:
    counter = tmp_path / "spawns"
    llm.tool_calls = [
        ("shell", {"command": "git status"}),
        ("shell", {"command": "git push origin main"}),
        ("shell", {"command": "ls -la"}),
    ]
    process = shell_process(counter, make_script, {"arguments.command": "git push*"})
    await one_run(process)
    assert [a["command"] for a in spawned(counter)] == ["git push origin main"]


async def test_an_argument_matcher_takes_a_regular_expression_and_lists_as_json_text(
    llm: FakeLLM, tmp_path: Path, make_script: ScriptFactory
) -> None:
    counter = tmp_path / "spawns"
    llm.tool_calls = [
        ("shell", {"command": "rm", "paths": ["/tmp/a"]}),
        ("shell", {"command": "rm", "paths": ["/etc/passwd", "/tmp/b"]}),
    ]
    process = shell_process(counter, make_script, {"arguments.paths": 're:"/etc/'})
    await one_run(process)
    assert [a["paths"] for a in spawned(counter)] == [["/etc/passwd", "/tmp/b"]]


async def test_an_argument_matcher_on_a_path_the_call_lacks_spawns_nothing(
    llm: FakeLLM, tmp_path: Path, make_script: ScriptFactory
) -> None:
    counter = tmp_path / "spawns"
    llm.tool_calls = [("shell", {"command": "git push"})]
    process = shell_process(counter, make_script, {"arguments.paths.0": "*"})
    await one_run(process)
    assert spawned(counter) == []


async def test_an_argument_matcher_with_a_list_index_reads_that_item(
    llm: FakeLLM, tmp_path: Path, make_script: ScriptFactory
) -> None:
    counter = tmp_path / "spawns"
    llm.tool_calls = [
        ("shell", {"command": "rm", "paths": ["/tmp/a", "/etc/x"]}),
        ("shell", {"command": "rm", "paths": ["/etc/y"]}),
    ]
    process = shell_process(counter, make_script, {"arguments.paths.0": "/etc/*"})
    await one_run(process)
    assert [a["paths"] for a in spawned(counter)] == [["/etc/y"]]


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ("user_prompt_submit", "arguments.command"),
        ("permission_denied", "arguments.command"),
        ("pre_tool_use", "argument.command"),
        ("pre_tool_use", "arguments."),
    ],
)
def test_an_argument_matcher_is_refused_where_the_event_has_no_arguments(
    event: str, field: str
) -> None:
    with pytest.raises(ValidationError, match=f"matcher field '{field}' is not available"):
        HookConfig(event=event, command=["true"], matcher={field: "x"})


def test_the_refusal_of_an_unknown_field_names_the_argument_paths_where_they_are_allowed() -> None:
    with pytest.raises(ValidationError, match=r"allowed: tool_name, arguments\.<path>"):
        HookConfig(event="permission_request", command=["true"], matcher={"x": "y"})
