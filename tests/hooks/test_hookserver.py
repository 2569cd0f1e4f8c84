"""tether.hookserver on its own: the answers a handler's results become, and serving over real
pipes of a real child process."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ScriptFactory
from tether.hookserver import Block, answer, serve


def test_serve_returns_the_handler_unchanged_outside_a_script() -> None:
    def handle(event: dict[str, object]) -> None:
        return None

    assert serve(handle) is handle


def test_none_is_an_empty_answer_with_the_requests_id() -> None:
    assert answer(lambda event: None, {"id": "4", "event": "x", "data": {}}) == {"id": "4"}


def test_a_returned_dict_is_the_answer_and_the_handler_sees_no_id() -> None:
    seen: list[dict[str, object]] = []

    def handle(event: dict[str, object]) -> dict[str, object]:
        seen.append(event)
        return {"data": {"prompt": "new"}, "log": "changed"}

    got = answer(handle, {"id": "1", "event": "user_prompt_submit", "data": {"prompt": "old"}})

    assert got == {"id": "1", "data": {"prompt": "new"}, "log": "changed"}
    assert seen == [{"event": "user_prompt_submit", "data": {"prompt": "old"}}]


def test_block_becomes_a_block_answer_with_its_reason() -> None:
    def handle(event: dict[str, object]) -> None:
        raise Block("not today")

    assert answer(handle, {"id": "2"}) == {"id": "2", "block": True, "reason": "not today"}


def test_another_exception_becomes_an_error_answer() -> None:
    def handle(event: dict[str, object]) -> None:
        raise KeyError("prompt")

    assert answer(handle, {"id": "3"}) == {"id": "3", "error": "KeyError: 'prompt'"}


def test_a_result_that_is_not_a_dict_is_an_error_answer() -> None:
    got = answer(lambda event: "yes", {"id": "5"})

    assert got["id"] == "5"
    assert "returns None or an answer dict" in got["error"]


def test_a_served_script_answers_each_request_line_and_ends_with_its_stdin(
    make_script: ScriptFactory,
) -> None:
    script = make_script(
        """
        from tether.hookserver import serve

        @serve
        def handle(event):
            print("this goes to stderr, not into the answers")
            return {"reason": event["data"]["n"]}
        """
    )
    lines = "".join(
        json.dumps({"id": str(n), "event": "x", "data": {"n": n}}) + "\n" for n in range(3)
    )
    done = subprocess.run(
        [script], input=lines + "not json\n", capture_output=True, text=True, timeout=30
    )

    assert done.returncode == 0
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert answers == [{"reason": n, "id": str(n)} for n in range(3)]
    assert "this goes to stderr" in done.stderr
    assert "skipped a line that is not a request" in done.stderr


def test_an_async_handler_is_served_too(make_script: ScriptFactory) -> None:
    script = make_script(
        """
        import asyncio
        from tether.hookserver import serve

        @serve
        async def handle(event):
            await asyncio.sleep(0.01 * (3 - event["data"]["n"]))
            return {"reason": str(event["data"]["n"])}
        """
    )
    lines = "".join(json.dumps({"id": str(n), "data": {"n": n}}) + "\n" for n in range(3))
    done = subprocess.run([script], input=lines, capture_output=True, text=True, timeout=30)

    assert done.returncode == 0, done.stderr
    answers = sorted(json.loads(line)["id"] for line in done.stdout.splitlines())
    assert answers == ["0", "1", "2"]


def test_hookserver_loads_no_heavy_library() -> None:
    code = "import sys, tether.hookserver; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    loaded = set(done.stdout.split())
    assert loaded.isdisjoint({"pydantic", "httpx", "openai", "starlette", "uvicorn"})
