"""Persistent command hooks with real co-processes (tether.hookserver scripts and raw JSON-line
programs): answers, concurrency, crashes, timeouts, restarts, process groups, environment."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable

import pytest

from _process_support import eventually, proc_state
from conftest import ScriptFactory
from tether import CommandHookError, HookContext, HookEvent, HookManager
from tether.hooks import PersistentHook
from tether.hooks._errors import CommandHookTimeoutError

SERVER = """
import asyncio, os, sys, time
from tether.hookserver import Block, serve

@serve
def handle(event):
    prompt = event["data"].get("prompt", "")
    print("a stray print goes to stderr")
    if prompt == "password":
        raise Block("prompts may not ask for passwords")
    if prompt == "crash":
        print("crashing now", file=sys.stderr, flush=True)
        os._exit(3)
    if prompt == "hang":
        time.sleep(60)
    if prompt == "raise":
        raise ValueError("the handler broke")
    if prompt == "env":
        return {"data": {"env": sorted(os.environ)}}
    return {"data": {**event["data"], "prompt": prompt + "!", "pid": os.getpid()}}
"""


def ctx(prompt: str) -> HookContext:
    return HookContext(HookEvent.USER_PROMPT_SUBMIT, "helper", {"prompt": prompt})


def gone(pid: int) -> Callable[[], bool]:
    """True once ``pid`` has ended (gone, or a zombie its new parent has yet to reap)."""

    def check() -> bool:
        return proc_state(pid) in (None, "Z")

    return check


@pytest.fixture
async def hooks() -> AsyncIterator[list[PersistentHook]]:
    """Persistent hooks the test makes (append them), closed after it."""
    made: list[PersistentHook] = []
    yield made
    for hook in made:
        await hook.aclose()


@pytest.fixture
def server(
    make_script: ScriptFactory, hooks: list[PersistentHook]
) -> Callable[..., PersistentHook]:
    def make(**options: object) -> PersistentHook:
        hook = PersistentHook([make_script(SERVER)], **options)  # type: ignore[arg-type]
        hooks.append(hook)
        return hook

    return make


@pytest.fixture
def answering(
    make_script: ScriptFactory, hooks: list[PersistentHook]
) -> Callable[..., PersistentHook]:
    """A persistent hook whose program answers each request ``line`` with its id and ``fields``
    (Python source of the rest of the answer dict), after the statement ``before``."""

    def make(fields: str, before: str = "", **options: object) -> PersistentHook:
        script = make_script(
            "import json, sys\n"
            "for line in sys.stdin:\n"
            "    request = json.loads(line)\n"
            + (f"    {before}\n" if before else "")
            + f'    print(json.dumps({{"id": request["id"], {fields}}}), flush=True)\n'
        )
        hook = PersistentHook([script], **options)  # type: ignore[arg-type]
        hooks.append(hook)
        return hook

    return make


async def test_a_persistent_hook_answers_every_event_from_one_program(
    server: Callable[..., PersistentHook],
) -> None:
    hook = server()

    answers = [await hook.run(ctx(f"p{i}")) for i in range(5)]

    assert [a.data["prompt"] for a in answers if a.data] == ["p0!", "p1!", "p2!", "p3!", "p4!"]
    assert len({a.data["pid"] for a in answers if a.data}) == 1
    assert hook.starts == 1


async def test_a_block_answer_blocks_through_the_manager(
    server: Callable[..., PersistentHook],
) -> None:
    hook = server()
    manager = HookManager()
    manager.register(HookEvent.USER_PROMPT_SUBMIT, hook.callback)

    blocked = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "password"})
    rewritten = await manager.dispatch(HookEvent.USER_PROMPT_SUBMIT, {"prompt": "hi"})

    assert blocked.blocked is True
    assert blocked.reason == "prompts may not ask for passwords"
    assert rewritten.data["prompt"] == "hi!"


async def test_a_handler_error_is_that_events_error_and_the_program_keeps_running(
    server: Callable[..., PersistentHook],
) -> None:
    hook = server()
    first = await hook.run(ctx("a"))

    with pytest.raises(CommandHookError, match="failed: ValueError: the handler broke"):
        await hook.run(ctx("raise"))
    after = await hook.run(ctx("b"))

    assert first.data is not None
    assert after.data is not None
    assert after.data["pid"] == first.data["pid"]


async def test_several_events_are_in_flight_at_once(
    make_script: ScriptFactory, hooks: list[PersistentHook]
) -> None:
    # Each answer waits until all three requests have arrived: one at a time, none would come.
    script = make_script(
        """
        import asyncio
        from tether.hookserver import serve

        arrived = 0
        all_in = None

        @serve
        async def handle(event):
            global arrived, all_in
            all_in = all_in or asyncio.Event()
            arrived += 1
            if arrived == 3:
                all_in.set()
            await all_in.wait()
            return {"data": {"seen": event["data"]["n"]}}
        """
    )
    hook = PersistentHook([script], timeout=10)
    hooks.append(hook)

    answers = await asyncio.gather(
        *(hook.run(HookContext(HookEvent.USER_PROMPT_SUBMIT, "p", {"n": n})) for n in (1, 2, 3))
    )

    assert [a.data for a in answers] == [{"seen": 1}, {"seen": 2}, {"seen": 3}]


async def test_a_crash_is_that_events_error_and_the_next_event_restarts_the_program(
    server: Callable[..., PersistentHook],
) -> None:
    hook = server(restart_backoff=0)
    first = await hook.run(ctx("a"))

    with pytest.raises(CommandHookError, match=r"(?s)exited 3: .*crashing now"):
        await hook.run(ctx("crash"))
    after = await hook.run(ctx("b"))

    assert first.data is not None
    assert after.data is not None
    assert after.data["pid"] != first.data["pid"]
    assert hook.starts == 2


@pytest.mark.slow
async def test_a_timeout_kills_the_program_and_the_next_event_restarts_it(
    server: Callable[..., PersistentHook],
) -> None:
    # The timeout bounds a restart's start-up too: long enough for a loaded host's Python.
    hook = server(timeout=3.0, restart_backoff=0)
    first = await hook.run(ctx("a"))
    assert first.data is not None
    pid = first.data["pid"]

    with pytest.raises(CommandHookTimeoutError, match=r"timed out after 3s and was killed"):
        await hook.run(ctx("hang"))
    await eventually(gone(pid), what="the timed-out program to be killed")
    after = await hook.run(ctx("b"))

    assert after.data is not None
    assert after.data["pid"] != pid


@pytest.mark.slow
async def test_a_timeout_fails_the_other_events_in_flight_as_the_program_is_killed(
    make_script: ScriptFactory, hooks: list[PersistentHook]
) -> None:
    script = make_script(
        """
        import asyncio
        from tether.hookserver import serve

        @serve
        async def handle(event):
            await asyncio.sleep(60)
        """
    )
    hook = PersistentHook([script], timeout=1.0, restart_backoff=0)
    hooks.append(hook)

    async def later() -> object:
        await asyncio.sleep(0.5)  # in flight when the first one times out
        return await hook.run(ctx("second"))

    first, second = await asyncio.gather(hook.run(ctx("first")), later(), return_exceptions=True)

    assert isinstance(first, CommandHookTimeoutError)
    assert isinstance(second, CommandHookError)
    assert not isinstance(second, CommandHookTimeoutError)  # not its own timeout: the kill
    assert "timed out after 1s (event 1) and was killed" in str(second)


async def test_after_a_crash_the_restart_waits_out_its_backoff(
    server: Callable[..., PersistentHook],
) -> None:
    hook = server(timeout=1, restart_backoff=30, max_restart_backoff=30)
    await hook.run(ctx("a"))
    with pytest.raises(CommandHookError, match="exited 3"):
        await hook.run(ctx("crash"))

    # The backoff (30 s) is longer than the event may wait (1 s): it fails at once, and says so.
    with pytest.raises(CommandHookError, match=r"is restarting after 1 failure\(s\) in a row"):
        await hook.run(ctx("b"))
    assert hook.starts == 1


async def test_the_program_runs_in_its_own_process_group(
    server: Callable[..., PersistentHook],
) -> None:
    hook = server()
    await hook.run(ctx("a"))

    assert hook.pid is not None
    assert os.getpgid(hook.pid) == hook.pid
    assert os.getpgid(hook.pid) != os.getpgid(0)


async def test_the_program_gets_the_minimal_environment(
    server: Callable[..., PersistentHook], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-for-hooks")
    monkeypatch.setenv("HOOK_SETTING", "given")
    hook = server(env_passthrough=["HOOK_SETTING"])

    answer = await hook.run(ctx("env"))

    assert answer.data is not None
    names = set(answer.data["env"])
    assert "OPENAI_API_KEY" not in names
    assert {"HOOK_SETTING", "TETHER_HOOK_PERSISTENT", "TETHER_HOOK_EVENT", "PATH"} <= names


async def test_aclose_stops_the_program_and_its_children(
    make_script: ScriptFactory,
) -> None:
    script = make_script(
        """
        import subprocess, sys
        from tether.hookserver import serve

        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])

        @serve
        def handle(event):
            return {"data": {"child": child.pid}}
        """
    )
    hook = PersistentHook([script])
    answer = await hook.run(ctx("a"))
    assert answer.data is not None
    pid, child = hook.pid, answer.data["child"]
    assert pid is not None

    await hook.aclose()

    assert hook.pid is None
    await eventually(gone(pid), what="the program to end")
    await eventually(gone(child), what="the program's child to end")


@pytest.mark.slow
async def test_a_program_that_ignores_its_closed_stdin_is_killed_on_close(
    make_script: ScriptFactory,
) -> None:
    script = make_script(
        """
        import json, signal, sys, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        line = sys.stdin.readline()
        print(json.dumps({"id": json.loads(line)["id"]}), flush=True)
        while True:
            time.sleep(1)
        """
    )
    hook = PersistentHook([script])
    await hook.run(ctx("a"))
    pid = hook.pid
    assert pid is not None

    await hook.aclose()

    await eventually(gone(pid), what="the program to be killed")


async def test_a_line_that_is_not_an_answer_is_skipped(
    answering: Callable[..., PersistentHook], caplog: pytest.LogCaptureFixture
) -> None:
    hook = answering('"reason": "fine"', before='print("hello from a raw program", flush=True)')

    answer = await hook.run(ctx("a"))

    assert answer.reason == "fine"
    assert "not an answer" in caplog.text


async def test_an_answer_that_breaks_the_rules_is_that_events_error(
    answering: Callable[..., PersistentHook],
) -> None:
    hook = answering('"data": [1, 2]')

    with pytest.raises(CommandHookError, match="'data' must be a JSON object, got list"):
        await hook.run(ctx("a"))


async def test_a_line_over_max_output_bytes_kills_the_program(
    answering: Callable[..., PersistentHook],
) -> None:
    hook = answering('"log": "x" * 5000', max_output_bytes=1000)

    with pytest.raises(CommandHookError, match="longer than max_output_bytes"):
        await hook.run(ctx("a"))


async def test_a_missing_program_is_an_error_at_its_first_event(
    tmp_path: os.PathLike[str],
) -> None:
    hook = PersistentHook([os.path.join(tmp_path, "nope.py")])

    with pytest.raises(CommandHookError, match="hook command not found"):
        await hook.run(ctx("a"))


def test_a_bad_backoff_is_refused_when_the_hook_is_made() -> None:
    with pytest.raises(ValueError, match="restart_backoff must be a number of seconds >= 0"):
        PersistentHook(["x"], restart_backoff=-1)
    with pytest.raises(ValueError, match="must be at least restart_backoff"):
        PersistentHook(["x"], restart_backoff=5, max_restart_backoff=1)


async def test_the_request_line_is_the_envelope_with_an_id(
    answering: Callable[..., PersistentHook],
) -> None:
    hook = answering('"log": line')
    context = ctx("hello")

    answer = await hook.run(context)

    assert answer.log is not None
    request = json.loads(answer.log)
    assert request == {"id": request["id"], **json.loads(json.dumps(context.envelope()))}
    assert isinstance(request["id"], str)
