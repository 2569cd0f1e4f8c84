"""ShellHook: the command-hook contract (stdin envelope, stdout answer, result table, env, cwd)."""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tether.hooks import (
    SAFE_ENV_VARS,
    CommandHookError,
    HookBlocked,
    HookContext,
    HookEvent,
    HookManager,
    ShellHook,
    ShellHookResult,
)

PY = sys.executable

#: A hook program that answers with everything it received.
REPORTER = """
import json, os, sys
envelope = json.loads(sys.stdin.read() or "null")
print(json.dumps({"data": {
    "envelope": envelope,
    "argv": sys.argv[1:],
    "env": dict(os.environ),
    "cwd": os.getcwd(),
}}))
"""


def context(
    event: HookEvent = HookEvent.USER_PROMPT_SUBMIT,
    data: dict[str, Any] | None = None,
    process_id: str = "support-bot",
    metadata: dict[str, Any] | None = None,
) -> HookContext:
    return HookContext(event, process_id, {"prompt": "hi"} if data is None else data, metadata)


async def report(hook: ShellHook, ctx: HookContext | None = None) -> dict[str, Any]:
    result = await hook.run(ctx or context())
    assert result.data is not None
    return result.data


def same_dir(a: str | Path, b: str | Path) -> bool:
    return Path(a).resolve() == Path(b).resolve()


def answer(payload: object, exit_code: int = 0) -> list[str]:
    """A command that prints ``payload`` (a str as is, anything else as JSON) and exits."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return [PY, "-c", f"import sys; sys.stdout.write({text!r}); sys.exit({exit_code})"]


# -- stdin envelope ---------------------------------------------------------------------------


async def test_the_program_gets_the_event_envelope_on_stdin(make_script: Any) -> None:
    ctx = context(
        data={"prompt": "hi", "event_id": "e1"},
        metadata={"process_name": "support-bot", "process_id": "63712925"},
    )

    envelope = (await report(ShellHook([make_script(REPORTER)]), ctx))["envelope"]

    assert set(envelope) == {"event", "process_id", "timestamp", "data", "metadata"}
    assert envelope["event"] == "user_prompt_submit"
    assert envelope["process_id"] == "support-bot"
    assert envelope["data"] == {"prompt": "hi", "event_id": "e1"}
    assert envelope["metadata"] == {"process_name": "support-bot", "process_id": "63712925"}
    assert datetime.fromisoformat(envelope["timestamp"]) == ctx.timestamp


async def test_data_that_json_cannot_encode_is_sent_as_its_string(make_script: Any) -> None:
    ctx = context(data={"path": Path("/tmp/x")})

    envelope = (await report(ShellHook([make_script(REPORTER)]), ctx))["envelope"]

    assert envelope["data"] == {"path": "/tmp/x"}


async def test_the_event_never_appears_on_the_command_line(make_script: Any) -> None:
    data = await report(ShellHook([make_script(REPORTER), "--flag"]))

    assert data["argv"] == ["--flag"]


# -- stdout answer and result table --------------------------------------------------------------


async def test_exit_zero_with_empty_stdout_is_success_with_nothing_changed() -> None:
    result = await ShellHook(["/bin/true"]).run(context())

    assert result == ShellHookResult(block=False, reason="", data=None, log=None, raw="")


async def test_whitespace_only_stdout_counts_as_empty() -> None:
    result = await ShellHook(answer("  \n")).run(context())

    assert not result.block
    assert result.data is None


async def test_a_json_object_answer_is_parsed_into_the_result() -> None:
    reply = {"block": True, "reason": "not today", "data": {"prompt": "X"}, "log": "checked"}

    result = await ShellHook(answer(reply)).run(context())

    assert result.block is True
    assert result.reason == "not today"
    assert result.data == {"prompt": "X"}
    assert result.log == "checked"
    assert json.loads(result.raw) == reply


async def test_every_answer_key_is_optional() -> None:
    result = await ShellHook(answer({})).run(context())

    assert result == ShellHookResult(raw="{}")


async def test_a_non_string_log_is_kept_as_text() -> None:
    result = await ShellHook(answer({"log": {"n": 1}})).run(context())

    assert result.log == "{'n': 1}"


async def test_data_in_the_answer_replaces_the_event_data() -> None:
    manager = HookManager()
    manager.register(
        HookEvent.USER_PROMPT_SUBMIT, ShellHook(answer({"data": {"prompt": "R"}})).callback
    )

    result = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "hi", "event_id": "e"})

    assert result.data == {"prompt": "R"}


async def test_block_true_refuses_the_action_with_the_reason() -> None:
    manager = HookManager()
    hook = ShellHook(answer({"block": True, "reason": "policy says no"}))
    manager.register(HookEvent.USER_PROMPT_SUBMIT, hook.callback)

    result = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "hi"})

    assert result.blocked
    assert result.reason == "policy says no"


async def test_the_callback_raises_hook_blocked_for_a_block_answer() -> None:
    hook = ShellHook(answer({"block": True, "reason": "r"}))

    with pytest.raises(HookBlocked, match="r"):
        await hook.callback(context())


async def test_log_is_logged_at_debug_level(caplog: pytest.LogCaptureFixture) -> None:
    hook = ShellHook(answer({"log": "audited prompt 42"}))

    with caplog.at_level(logging.DEBUG, logger="tether.hooks"):
        await hook.callback(context())

    records = [r for r in caplog.records if "audited prompt 42" in r.getMessage()]
    assert [r.levelno for r in records] == [logging.DEBUG]


async def test_run_returns_the_answer_without_applying_it() -> None:
    ctx = context(data={"prompt": "original"})
    hook = ShellHook(answer({"block": True, "reason": "no", "data": {"prompt": "changed"}}))

    result = await hook.run(ctx)

    assert result.block
    assert result.data == {"prompt": "changed"}
    assert ctx.data == {"prompt": "original"}


async def test_a_non_zero_exit_is_an_error_with_the_code_and_stderr() -> None:
    hook = ShellHook([PY, "-c", "import sys; sys.stderr.write('disk full'); sys.exit(7)"])

    with pytest.raises(CommandHookError, match="exited 7") as info:
        await hook.run(context())

    assert "disk full" in str(info.value)


async def test_the_error_message_keeps_at_most_500_characters_of_stderr() -> None:
    hook = ShellHook([PY, "-c", "import sys; sys.stderr.write('e' * 5000); sys.exit(1)"])

    with pytest.raises(CommandHookError) as info:
        await hook.run(context())

    assert "e" * 500 in str(info.value)
    assert "e" * 501 not in str(info.value)


async def test_a_non_zero_exit_without_stderr_says_so_after_the_code() -> None:
    hook = ShellHook([PY, "-c", "import sys; sys.exit(4)"])

    with pytest.raises(CommandHookError) as info:
        await hook.run(context())

    assert str(info.value).endswith("exited 4 (nothing on stderr)")


async def test_a_non_zero_exit_with_a_block_answer_is_still_an_error() -> None:
    hook = ShellHook(answer({"block": True, "reason": "x"}, exit_code=2))

    with pytest.raises(CommandHookError, match="exited 2"):
        await hook.run(context())


async def test_stdout_that_is_not_json_is_an_error() -> None:
    with pytest.raises(CommandHookError, match="not a JSON object"):
        await ShellHook(answer("all good!")).run(context())


async def test_a_json_array_is_an_error() -> None:
    with pytest.raises(CommandHookError, match="JSON list, not a JSON object"):
        await ShellHook(answer([{"block": True}])).run(context())


@pytest.mark.parametrize("data", [[1, 2], "text", 3])
async def test_data_that_is_not_an_object_is_an_error(data: object) -> None:
    with pytest.raises(CommandHookError, match="'data' must be a JSON object"):
        await ShellHook(answer({"data": data})).run(context())


async def test_stdout_over_max_output_bytes_is_an_error() -> None:
    hook = ShellHook([PY, "-c", "print('x' * 5000)"], max_output_bytes=1000)

    with pytest.raises(CommandHookError, match="max_output_bytes=1000"):
        await hook.run(context())


async def test_a_program_running_past_its_timeout_is_killed_and_an_error() -> None:
    hook = ShellHook([PY, "-c", "import time; time.sleep(30)"], timeout=0.3)

    with pytest.raises(CommandHookError, match=r"timed out after 0\.3s"):
        await hook.run(context())


async def test_a_command_hook_error_is_isolated_by_the_manager() -> None:
    manager = HookManager()
    hook_id = manager.register(HookEvent.TASK_COMPLETED, ShellHook(answer("oops")).callback)

    result = await manager.dispatch(HookEvent.TASK_COMPLETED, {"outcome": "success"})

    assert [(i, type(e)) for i, e in result.errors] == [(hook_id, CommandHookError)]
    assert isinstance(result.errors[0][1], RuntimeError)


# -- the command line -----------------------------------------------------------------------------


async def test_a_command_string_is_not_run_by_a_shell(make_script: Any) -> None:
    script = make_script(REPORTER)

    data = await report(ShellHook(f"{script} ; rm -rf / $(whoami) `id` && echo $HOME"))

    assert data["argv"] == [";", "rm", "-rf", "/", "$(whoami)", "`id`", "&&", "echo", "$HOME"]


async def test_a_command_string_is_split_like_a_terminal_would(make_script: Any) -> None:
    script = make_script(REPORTER)

    data = await report(ShellHook(f"{script} \"two words\" 'single quoted' plain\\ escaped"))

    assert data["argv"] == ["two words", "single quoted", "plain escaped"]


async def test_a_command_list_is_used_as_is(make_script: Any) -> None:
    data = await report(ShellHook([make_script(REPORTER), "a b", "$(x)", "'q'"]))

    assert data["argv"] == ["a b", "$(x)", "'q'"]


async def test_shell_true_runs_the_string_through_sh() -> None:
    hook = ShellHook("""echo '{"data": {"n": '$((40 + 2))'}}'""", shell=True)

    result = await hook.run(context())

    assert result.data == {"n": 42}


async def test_shell_true_joins_a_list_into_one_command_line() -> None:
    hook = ShellHook(["printf", "%s", '{"data": {"ok": true}}'], shell=True)

    result = await hook.run(context())

    assert result.data == {"ok": True}


async def test_a_bare_program_name_is_looked_up_on_path(
    tmp_path: Path, make_script: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_script(REPORTER, name="tether-test-reporter")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")

    data = await report(ShellHook("tether-test-reporter --x"))

    assert data["argv"] == ["--x"]


async def test_a_program_not_on_path_is_a_hook_error_naming_it() -> None:
    hook = ShellHook("tether-no-such-program-xyz --flag")

    with pytest.raises(CommandHookError, match="tether-no-such-program-xyz"):
        await hook.run(context())


async def test_a_missing_program_path_is_a_hook_error_naming_it(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.sh")

    with pytest.raises(CommandHookError, match=re.escape(missing)):
        await ShellHook([missing]).run(context())


async def test_a_program_that_is_not_executable_is_a_hook_error(tmp_path: Path) -> None:
    script = tmp_path / "plain.txt"
    script.write_text("not a program")

    with pytest.raises(CommandHookError, match="not executable"):
        await ShellHook([str(script)]).run(context())


async def test_a_missing_program_is_isolated_by_the_manager_not_a_crash() -> None:
    manager = HookManager()
    manager.register(HookEvent.SESSION_START, ShellHook("tether-no-such-program-xyz").callback)

    result = await manager.dispatch(HookEvent.SESSION_START)

    assert "tether-no-such-program-xyz" in str(result.errors[0][1])


# -- environment --------------------------------------------------------------------------------


async def test_the_host_environment_does_not_reach_the_program(
    make_script: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_TEST_CANARY_API_KEY", "sk-canary-secret")

    env = (await report(ShellHook([make_script(REPORTER)])))["env"]

    assert "TETHER_TEST_CANARY_API_KEY" not in env
    assert "sk-canary-secret" not in json.dumps(env)


async def test_the_program_gets_only_safe_variables_and_the_tether_ones(
    make_script: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.setenv("LANG", "C.UTF-8")

    env = (await report(ShellHook([make_script(REPORTER)])))["env"]

    host_safe = {k: v for k, v in os.environ.items() if k in SAFE_ENV_VARS}
    python_own = {"LC_CTYPE"}  # the interpreter may set this one itself at start-up
    tether_own = {"TETHER_HOOK_EVENT", "TETHER_PROCESS", "TETHER_HOOK_RUN"}
    assert set(env) - python_own == set(host_safe) | tether_own
    assert env["TZ"] == "UTC"
    assert env["PATH"] == os.environ["PATH"]


def test_safe_env_vars_is_the_documented_set() -> None:
    posix = {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE"}
    posix |= {"LC_MESSAGES", "TZ", "TMPDIR", "TEMP", "TMP", "TERM"}
    windows = {"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE"}
    windows |= {"APPDATA", "LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES"}

    assert posix | windows == SAFE_ENV_VARS
    assert isinstance(SAFE_ENV_VARS, frozenset)


async def test_tether_hook_event_and_tether_process_are_set(make_script: Any) -> None:
    ctx = context(HookEvent.TASK_CREATED, process_id="support-bot")

    env = (await report(ShellHook([make_script(REPORTER)]), ctx))["env"]

    assert env["TETHER_HOOK_EVENT"] == "task_created"
    assert env["TETHER_PROCESS"] == "support-bot"


async def test_tether_process_is_the_process_name_from_the_metadata(make_script: Any) -> None:
    ctx = context(process_id="p-1", metadata={"process_name": "helper", "process_id": "uuid"})

    env = (await report(ShellHook([make_script(REPORTER)]), ctx))["env"]

    assert env["TETHER_PROCESS"] == "helper"


async def test_env_passthrough_hands_named_host_variables_to_the_program(
    make_script: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_TEST_SLACK_TOKEN", "xoxb-1")
    monkeypatch.setenv("TETHER_TEST_OTHER", "kept out")
    monkeypatch.delenv("TETHER_TEST_UNSET", raising=False)
    hook = ShellHook(
        [make_script(REPORTER)], env_passthrough=["TETHER_TEST_SLACK_TOKEN", "TETHER_TEST_UNSET"]
    )

    env = (await report(hook))["env"]

    assert env["TETHER_TEST_SLACK_TOKEN"] == "xoxb-1"
    assert "TETHER_TEST_UNSET" not in env
    assert "TETHER_TEST_OTHER" not in env


async def test_env_references_are_resolved_when_the_hook_runs(
    make_script: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TETHER_TEST_LATE", raising=False)
    hook = ShellHook([make_script(REPORTER)], env={"TOKEN": "Bearer ${TETHER_TEST_LATE}"})
    monkeypatch.setenv("TETHER_TEST_LATE", "first")
    first = (await report(hook))["env"]["TOKEN"]
    monkeypatch.setenv("TETHER_TEST_LATE", "second")
    second = (await report(hook))["env"]["TOKEN"]

    assert (first, second) == ("Bearer first", "Bearer second")


async def test_an_env_reference_with_a_default_uses_it_when_the_variable_is_unset(
    make_script: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TETHER_TEST_MISSING", raising=False)
    monkeypatch.setenv("TETHER_TEST_EMPTY", "")
    monkeypatch.setenv("TETHER_TEST_SET", "value")
    hook = ShellHook(
        [make_script(REPORTER)],
        env={
            "A": "${TETHER_TEST_MISSING:-fallback}",
            "B": "${TETHER_TEST_EMPTY:-for-empty}",
            "C": "${TETHER_TEST_SET:-unused}",
            "D": "${TETHER_TEST_MISSING:-}",
        },
    )

    env = (await report(hook))["env"]

    assert (env["A"], env["B"], env["C"], env["D"]) == ("fallback", "for-empty", "value", "")


async def test_an_env_reference_to_an_unset_variable_without_default_is_a_hook_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TETHER_TEST_MISSING", raising=False)
    hook = ShellHook(["/bin/true"], env={"TOKEN": "${TETHER_TEST_MISSING}"})

    with pytest.raises(CommandHookError, match="TETHER_TEST_MISSING"):
        await hook.run(context())


async def test_literal_env_values_are_passed_as_is(make_script: Any) -> None:
    hook = ShellHook([make_script(REPORTER)], env={"MODE": "strict", "COST": "$5"})

    env = (await report(hook))["env"]

    assert (env["MODE"], env["COST"]) == ("strict", "$5")


async def test_inherit_env_passes_the_whole_host_environment(
    make_script: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_TEST_CANARY_API_KEY", "sk-canary-secret")

    env = (await report(ShellHook([make_script(REPORTER)], inherit_env=True)))["env"]

    assert env["TETHER_TEST_CANARY_API_KEY"] == "sk-canary-secret"
    assert env["TETHER_HOOK_EVENT"] == "user_prompt_submit"


# -- cwd and encoding ------------------------------------------------------------------------------


async def test_cwd_sets_the_programs_working_directory(tmp_path: Path, make_script: Any) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()

    data = await report(ShellHook([make_script(REPORTER)], cwd=workdir))

    assert same_dir(data["cwd"], workdir)


async def test_a_relative_program_path_is_found_in_cwd(tmp_path: Path, make_script: Any) -> None:
    make_script(REPORTER, name="local-hook")

    data = await report(ShellHook(["./local-hook", "arg"], cwd=tmp_path))

    assert data["argv"] == ["arg"]


async def test_without_cwd_the_program_runs_in_the_current_directory(make_script: Any) -> None:
    data = await report(ShellHook([make_script(REPORTER)]))

    assert same_dir(data["cwd"], os.getcwd())


async def test_stdout_is_decoded_with_the_hooks_encoding() -> None:
    program = (
        'import sys; sys.stdout.buffer.write(\'{"data": {"w": "caf\\u00e9"}}\'.encode(\'latin-1\'))'
    )

    result = await ShellHook([PY, "-c", program], encoding="latin-1").run(context())

    assert result.data == {"w": "café"}


async def test_stdout_that_does_not_decode_is_a_hook_error() -> None:
    program = 'import sys; sys.stdout.buffer.write(b\'{"data": {"w": "caf\\xe9"}}\')'

    with pytest.raises(CommandHookError, match="not utf-8"):
        await ShellHook([PY, "-c", program]).run(context())


async def test_stdin_is_encoded_with_the_hooks_encoding(make_script: Any) -> None:
    script = make_script(
        """
        import json, sys
        envelope = json.loads(sys.stdin.buffer.read().decode("utf-16"))
        answer = {"data": {"event": envelope["event"]}}
        sys.stdout.buffer.write(json.dumps(answer).encode("utf-16"))
        """
    )

    result = await ShellHook([script], encoding="utf-16").run(context())

    assert result.data == {"event": "user_prompt_submit"}


def test_an_unknown_encoding_fails_at_construction() -> None:
    with pytest.raises(LookupError):
        ShellHook(["/bin/true"], encoding="no-such-codec")


# -- construction --------------------------------------------------------------------------------


@pytest.mark.parametrize("timeout", [0, -1, 3600.5])
def test_a_timeout_outside_zero_to_3600_is_rejected(timeout: float) -> None:
    with pytest.raises(ValueError, match="timeout"):
        ShellHook(["/bin/true"], timeout=timeout)


def test_a_timeout_that_is_not_a_number_raises_type_error() -> None:
    with pytest.raises(TypeError, match="timeout"):
        ShellHook(["/bin/true"], timeout="5")  # type: ignore[arg-type]


@pytest.mark.parametrize("size", [0, 10 * 1024 * 1024 + 1])
def test_max_output_bytes_outside_one_byte_to_10_mib_is_rejected(size: int) -> None:
    with pytest.raises(ValueError, match="max_output_bytes"):
        ShellHook(["/bin/true"], max_output_bytes=size)


@pytest.mark.parametrize("command", ["", "   ", [], ["/bin/true", 3]])
def test_a_command_that_names_no_program_is_rejected(command: Any) -> None:
    with pytest.raises(ValueError, match="command"):
        ShellHook(command)


def test_the_shell_hook_defaults_match_the_reference() -> None:
    hook = ShellHook("/bin/true")

    assert hook.timeout == 5.0
    assert hook.cwd is None
    assert hook.env is None
    assert hook.shell is False
    assert hook.encoding == "utf-8"
    assert hook.inherit_env is False
    assert hook.env_passthrough == []
    assert hook.max_output_bytes == 65536
    assert repr(hook) == "ShellHook('/bin/true', timeout=5)"
