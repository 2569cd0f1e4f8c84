"""Command hooks declared as HookConfig: each field of the reference table reaches the program.

The reference's HookConfig table and its ShellHook section, checked end to end through
``register_config`` and ``dispatch`` with real hook programs.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pydantic
import pytest

from tether.hooks import (
    CommandHookError,
    HookConfig,
    HookContext,
    HookEvent,
    HookManager,
    HookTimeoutError,
    ShellHook,
)

PY = sys.executable
PROMPT = HookEvent.USER_PROMPT_SUBMIT

#: A hook program that answers with its arguments and working directory.
REPORTER = """
import json, os, sys
print(json.dumps({"data": {"argv": sys.argv[1:], "cwd": os.getcwd()}}))
"""


def same_dir(a: str | Path, b: str | Path) -> bool:
    return Path(a).resolve() == Path(b).resolve()


def writes(size: int) -> list[str]:
    """A command that writes a JSON object of exactly ``size`` bytes to stdout."""
    program = (
        f"import sys; body = '{{\"log\": \"' + 'x' * ({size} - 11) + '\"}}'; "
        f"assert len(body) == {size}; sys.stdout.write(body)"
    )
    return [PY, "-c", program]


async def test_a_command_string_is_split_like_a_terminal_and_run_in_the_configs_cwd(
    tmp_path: Path, make_script: Any
) -> None:
    make_script(REPORTER, name="notify.sh")
    manager = HookManager()
    manager.register_config(
        HookConfig(
            event="task_completed",
            command="./notify.sh --channel 'ops team' $HOME",
            cwd=str(tmp_path),
        )
    )

    result = await manager.dispatch("task_completed", {"outcome": "success"})

    assert result.errors == []
    # Quotes group words as in a terminal; no shell runs it, so $HOME stays as written.
    assert result.data["argv"] == ["--channel", "ops team", "$HOME"]
    assert same_dir(result.data["cwd"], tmp_path)


def test_a_command_hook_config_carries_priority_once_tag_and_fail_closed() -> None:
    manager = HookManager()

    hook_id = manager.register_config(
        HookConfig(
            event="user_prompt_submit",
            command=["/bin/true"],
            priority=7,
            once=True,
            tag="policy",
            fail_closed=True,
        )
    )

    (info,) = manager.describe("user_prompt_submit")
    assert info.hook_id == hook_id
    assert (info.priority, info.once, info.tag, info.fail_closed) == (7, True, "policy", True)


async def test_a_once_command_hook_runs_its_program_on_the_first_event_only(
    tmp_path: Path, make_script: Any
) -> None:
    runs = tmp_path / "runs.txt"
    script = make_script(f"open({str(runs)!r}, 'a').write('ran\\n')")
    manager = HookManager()
    manager.register_config(HookConfig(event="session_start", command=[script], once=True))

    first = await manager.dispatch("session_start", {"restart": False})
    second = await manager.dispatch("session_start", {"restart": False})

    assert (first.fired, second.fired) == (1, 0)
    assert runs.read_text() == "ran\n"
    assert manager.registered("session_start") == []


async def test_remove_by_tag_removes_a_command_hook_config() -> None:
    manager = HookManager()
    manager.register_config(HookConfig(event="task_completed", command="/bin/true", tag="ops"))

    assert await manager.remove_by_tag("ops") == 1
    assert (await manager.dispatch("task_completed")).fired == 0


async def test_a_command_hook_configs_timeout_is_when_its_program_is_killed() -> None:
    manager = HookManager()
    hook_id = manager.register_config(
        HookConfig(
            event="task_completed",
            command=[PY, "-c", "import time; time.sleep(30)"],
            timeout=0.3,
        )
    )

    result = await manager.dispatch("task_completed")

    ((failed_id, error),) = result.errors
    assert failed_id == hook_id
    assert isinstance(error, CommandHookError)
    assert error.timed_out
    # a timeout like a callback's: a HookTimeoutError, so a TimeoutError too
    assert isinstance(error, HookTimeoutError)
    assert isinstance(error, TimeoutError)
    assert "timed out after 0.3s and was killed" in str(error)
    assert not result.blocked


async def test_a_fail_closed_command_hook_that_times_out_blocks_the_action() -> None:
    manager = HookManager()
    ran: list[str] = []
    manager.register_config(
        HookConfig(
            event="user_prompt_submit",
            command=[PY, "-c", "import time; time.sleep(30)"],
            timeout=0.3,
            fail_closed=True,
            priority=1,
        )
    )

    @manager.on(PROMPT)
    async def later(ctx: HookContext) -> None:
        ran.append("later")

    result = await manager.dispatch(PROMPT, {"prompt": "hi"})

    assert result.blocked
    assert result.reason is not None
    assert result.reason.startswith("hook failed (fail_closed)")
    assert "timed out" in result.reason
    assert len(result.errors) == 1
    assert ran == []


async def test_a_command_hook_configs_max_output_bytes_bounds_the_programs_stdout() -> None:
    manager = HookManager()
    manager.register_config(
        HookConfig(event="task_completed", command=writes(101), max_output_bytes=100)
    )

    result = await manager.dispatch("task_completed")

    ((_, error),) = result.errors
    assert isinstance(error, CommandHookError)
    assert "max_output_bytes=100" in str(error)


@pytest.mark.parametrize(("size", "accepted"), [(100, True), (101, False)])
async def test_stdout_of_exactly_max_output_bytes_is_the_largest_accepted(
    size: int, accepted: bool
) -> None:
    hook = ShellHook(writes(size), max_output_bytes=100)
    ctx = HookContext(event=HookEvent.TASK_COMPLETED, process_id="triage", data={})

    if accepted:
        result = await hook.run(ctx)
        assert len(result.raw) == size
        assert result.log == "x" * (size - 11)
    else:
        with pytest.raises(CommandHookError, match="max_output_bytes=100"):
            await hook.run(ctx)


async def test_a_non_zero_exit_without_fail_closed_is_an_error_not_a_block() -> None:
    """Blocking is done with {"block": true}, not with an exit code."""
    manager = HookManager()
    ran: list[str] = []
    refuse_by_exit = [PY, "-c", "import json, sys; print(json.dumps({'block': True})); sys.exit(2)"]
    hook_id = manager.register(PROMPT, ShellHook(refuse_by_exit).callback, priority=1)

    @manager.on(PROMPT)
    async def later(ctx: HookContext) -> None:
        ran.append("later")

    result = await manager.dispatch(PROMPT, {"prompt": "hi"})

    assert not result.blocked
    assert result.reason is None
    assert [(i, type(e)) for i, e in result.errors] == [(hook_id, CommandHookError)]
    assert "exited 2" in str(result.errors[0][1])
    assert ran == ["later"]


@pytest.mark.parametrize("reply", [{"block": True}, {"block": True, "reason": ""}])
async def test_a_block_answer_without_a_reason_still_says_a_command_hook_refused(
    reply: dict[str, Any],
) -> None:
    manager = HookManager()
    hook = ShellHook([PY, "-c", f"print({json.dumps(reply)!r})"])
    manager.register(PROMPT, hook.callback)

    result = await manager.dispatch(PROMPT, {"prompt": "hi"})

    assert result.blocked
    assert result.reason == "blocked by a command hook (it gave no reason)"
    assert (await hook.run(HookContext(PROMPT, "p", {}))).reason == ""  # as the program said


async def test_a_later_hook_sees_the_data_a_command_hook_answered_with() -> None:
    manager = HookManager()
    seen: list[dict[str, Any]] = []
    answer = json.dumps({"data": {"prompt": "REWRITTEN"}})
    manager.register(PROMPT, ShellHook([PY, "-c", f"print({answer!r})"]).callback, priority=1)

    @manager.on(PROMPT)
    async def later(ctx: HookContext) -> None:
        seen.append(dict(ctx.data))

    result = await manager.dispatch(PROMPT, {"prompt": "hi", "event_id": "e1"})

    assert seen == [{"prompt": "REWRITTEN"}]
    assert result.data == {"prompt": "REWRITTEN"}


@pytest.mark.parametrize("option", ["shell", "inherit_env"])
def test_a_hook_config_refuses_the_code_only_shell_hook_options(option: str) -> None:
    """Only a ShellHook built in code may run through /bin/sh or inherit the environment."""
    with pytest.raises(pydantic.ValidationError, match=option):
        HookConfig.model_validate({"event": "task_completed", "command": "x", option: True})


@pytest.fixture
def far_from_utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The host's local time zone is 5 hours off UTC for the test."""
    if not hasattr(time, "tzset"):
        pytest.skip("time.tzset is POSIX only")
    monkeypatch.setenv("TZ", "EST+05")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.mark.usefixtures("far_from_utc")
async def test_the_envelope_timestamp_is_utc_whatever_the_host_time_zone(
    make_script: Any,
) -> None:
    script = make_script(
        """
        import json, sys
        print(json.dumps({"data": {"timestamp": json.load(sys.stdin)["timestamp"]}}))
        """
    )
    manager = HookManager()
    manager.register(HookEvent.SESSION_START, ShellHook([script]).callback)

    result = await manager.dispatch(HookEvent.SESSION_START, {"restart": False})

    stamp = result.data["timestamp"]
    assert stamp.endswith("+00:00")
    assert datetime.fromisoformat(stamp).utcoffset() == timedelta(0)


async def test_a_fail_closed_error_with_no_message_blocks_naming_the_error_type() -> None:
    manager = HookManager()

    async def broken(ctx: HookContext) -> None:
        raise RuntimeError()

    manager.register(PROMPT, broken, fail_closed=True)
    result = await manager.dispatch(PROMPT, {"prompt": "hi"})
    assert result.blocked
    assert result.reason == "hook failed (fail_closed): RuntimeError"
