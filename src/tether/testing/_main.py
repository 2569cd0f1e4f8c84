"""FakeLLM from the shell: ``tether fake-llm`` and ``python -m tether.testing``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

__all__ = ["main", "serve_fake_llm"]


async def _serve(host: str, port: int, reply: str | None) -> None:
    from ._fake_llm import FakeLLM

    llm = FakeLLM(port, host=host) if reply is None else FakeLLM(port, host=host, reply=reply)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
    async with llm:
        sys.stdout.write(
            f"FakeLLM serving an OpenAI-compatible API at {llm.base_url}\n"
            f"  try: tether run AGENT.agent --model openai:fake --base-url {llm.base_url}\n"
            "Ctrl-C stops it\n"
        )
        sys.stdout.flush()
        await stop.wait()


def serve_fake_llm(*, host: str = "127.0.0.1", port: int = 8781, reply: str | None = None) -> int:
    """Serve FakeLLM until SIGINT or SIGTERM; the exit status (0)."""
    asyncio.run(_serve(host, port, reply))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tether.testing", description="Serve FakeLLM until Ctrl-C."
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8781, help="port, 0 for any (default 8781)")
    parser.add_argument("--reply", default=None, help="what the model answers")
    args = parser.parse_args(argv)
    try:
        return serve_fake_llm(host=args.host, port=args.port, reply=args.reply)
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
