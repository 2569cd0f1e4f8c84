"""FakeLLM from the shell: ``tether fake-llm`` and ``python -m tether.testing``.

What it answers may be scripted with flags (``--reply`` repeated: the answers in order, the
last one kept; ``--tool-call NAME=JSON`` repeated: the tool calls, in order, of the requests
that offer tools) or a file (``--script FILE``, JSON or YAML)::

    reply: "Ticket triaged."            # the answer once the queued ones are used
    replies: ["Looking it up."]         # answers, in order
    tool_calls:                         # calls, in order, answered to requests offering tools
      - name: lookup_order
        arguments: {order_id: 1182}
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Script", "load_script", "main", "parse_tool_call", "serve_fake_llm"]


@dataclass
class Script:
    """What FakeLLM answers: ``replies`` in order, then ``reply``; ``tool_calls`` in order."""

    reply: str | None = None
    replies: list[str] = field(default_factory=list)
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)


async def _serve(host: str, port: int, script: Script) -> None:
    from ._fake_llm import FakeLLM

    llm = FakeLLM(port, host=host, replies=script.replies, tool_calls=script.tool_calls)
    if script.reply is not None:
        llm.reply = script.reply
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    async with llm:
        scripted = ""
        if script.replies or script.tool_calls:
            scripted = (
                f"  scripted: {len(script.replies)} reply(ies) then {llm.reply!r}, "
                f"{len(script.tool_calls)} tool call(s)\n"
            )
        sys.stdout.write(
            f"FakeLLM serving an OpenAI-compatible API at {llm.base_url}\n{scripted}"
            f"  try: tether run AGENT.agent --model openai:fake --base-url {llm.base_url}\n"
            "Ctrl-C stops it\n"
        )
        sys.stdout.flush()
        await stop.wait()


def serve_fake_llm(
    *,
    host: str = "127.0.0.1",
    port: int = 8781,
    reply: str | None = None,
    script: Script | None = None,
) -> int:
    """Serve FakeLLM until SIGINT or SIGTERM; the exit status (0)."""
    script = script or Script()
    if reply is not None:
        script.reply = reply
    asyncio.run(_serve(host, port, script))
    return 0


def parse_tool_call(text: str) -> tuple[str, dict[str, Any]]:
    """``NAME`` or ``NAME=JSON`` (a JSON object of arguments) as a scripted tool call."""
    name, sep, arguments = text.partition("=")
    name = name.strip()
    if not name:
        raise ValueError(f"--tool-call {text!r}: expected NAME or NAME=JSON-object")
    if not sep:
        return name, {}
    try:
        value = json.loads(arguments)
    except ValueError as exc:
        raise ValueError(f"--tool-call {text!r}: the arguments are not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ValueError(f"--tool-call {text!r}: the arguments must be a JSON object")
    return name, value


def load_script(path: str | Path) -> Script:
    """A script file (JSON or YAML): ``reply``, ``replies``, ``tool_calls`` (each a mapping of
    ``name`` and ``arguments``); ValueError naming the file and the field when it is wrong."""
    import yaml

    where = str(path)
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"--script {where}: cannot read it ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"--script {where}: not JSON or YAML ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"--script {where}: expected a mapping of reply, replies, tool_calls")
    unknown = sorted(set(data) - {"reply", "replies", "tool_calls"})
    if unknown:
        raise ValueError(
            f"--script {where}: unknown key {unknown[0]!r}; allowed: reply, replies, tool_calls"
        )
    reply, replies = data.get("reply"), data.get("replies", [])
    if reply is not None and not isinstance(reply, str):
        raise ValueError(f"--script {where}: reply must be a string, got {reply!r}")
    if not isinstance(replies, list) or not all(isinstance(r, str) for r in replies):
        raise ValueError(f"--script {where}: replies must be a list of strings")
    calls = data.get("tool_calls", [])
    if not isinstance(calls, list):
        raise ValueError(f"--script {where}: tool_calls must be a list")
    return Script(reply, list(replies), [_call(where, i, c) for i, c in enumerate(calls)])


def _call(where: str, index: int, call: Any) -> tuple[str, dict[str, Any] | str]:
    at = f"--script {where}: tool_calls[{index}]"
    if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
        raise ValueError(f"{at} must be a mapping with a 'name' (and 'arguments')")
    unknown = sorted(set(call) - {"name", "arguments"})
    if unknown:
        raise ValueError(f"{at}: unknown key {unknown[0]!r}; allowed: name, arguments")
    arguments = call.get("arguments", {})
    if not isinstance(arguments, dict | str):
        raise ValueError(f"{at}.arguments must be a mapping (or a string sent as it is)")
    return call["name"], arguments


def _script(args: argparse.Namespace) -> Script:
    script = load_script(args.script) if args.script else Script()
    replies = list(args.reply or ())
    if replies:
        script.replies += replies[:-1]
        script.reply = replies[-1]
    script.tool_calls += [parse_tool_call(text) for text in args.tool_call or ()]
    return script


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tether.testing", description="Serve FakeLLM until Ctrl-C."
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8781, help="port, 0 for any (default 8781)")
    parser.add_argument(
        "--reply", action="append", help="what the model answers (repeat: in order, last kept)"
    )
    parser.add_argument(
        "--tool-call",
        action="append",
        metavar="NAME=JSON",
        help="a tool call to answer a request offering tools with (repeat: in order)",
    )
    parser.add_argument("--script", default=None, help="a JSON or YAML file of the answers")
    args = parser.parse_args(argv)
    try:
        script = _script(args)
        return serve_fake_llm(host=args.host, port=args.port, script=script)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
