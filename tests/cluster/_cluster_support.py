"""Helpers of the multi-host cluster tests: real ``tether serve --cluster`` OS processes on
loopback, their hook log, a TCP proxy between a host and Redis that a test can cut, and a
private redis-server a test can restart empty."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from _net_support import free_port
from tether.testing import FakeLLM

__all__ = [
    "Host",
    "PrivateRedis",
    "RedisProxy",
    "StallingLLM",
    "hook_log",
    "seq",
    "write_manifests",
]

#: Appends what a session_start / session_end hook saw, with the host and the time, to a log.
HOOK = """\
import json, os, sys, time
ctx = json.load(sys.stdin)
line = {"host": os.environ["TEST_HOST"], "at": time.time(), "ctx": ctx}
with open(os.environ["TEST_HOOK_LOG"], "a") as f:
    f.write(json.dumps(line) + "\\n")
print("{}")
"""


def write_manifests(
    folder: Path,
    names: list[str],
    *,
    concurrency: int = 2,
    logged: tuple[str, ...] = ("session_start", "session_end"),
    extra: str = "",
) -> list[Path]:
    """One manifest per name: an OpenAI-compatible model (the FakeLLM the host's environment
    names), and command hooks logging the ``logged`` events (session_start and session_end);
    ``extra`` is added to each (YAML: tools, approval ...)."""
    (folder / "log_hook.py").write_text(HOOK)
    hooks = "".join(
        f"""
  - event: {event}
    command: ["{sys.executable}", "${{TETHER_MANIFEST_DIR}}/log_hook.py"]
    env_passthrough: [TEST_HOST, TEST_HOOK_LOG]
    timeout: 10"""
        for event in logged
    )
    paths = []
    for name in names:
        path = folder / f"{name}.agent"
        path.write_text(
            f"""
version: "1.0"
name: {name}
model: openai:fake-llm
instructions: Answer briefly.
concurrency: {concurrency}
max_retries: 2
max_queue_size: 5000
{extra}
hooks:{hooks}
"""
        )
        paths.append(path)
    return paths


def hook_log(path: Path) -> list[dict[str, Any]]:
    """The lines the session hooks wrote: host, at (time.time()), ctx (what the hook read)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Host:
    """One ``tether serve --cluster`` OS process."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        self.name = name
        self.url = ""
        self.child: asyncio.subprocess.Process | None = None
        self.out = folder / f"{name}.out"

    async def start(
        self,
        manifests: list[Path],
        *,
        redis_url: str,
        prefix: str,
        ttl: float,
        model_url: str,
        hook_log: Path,
        env: dict[str, str] | None = None,
    ) -> Host:
        env = {
            **os.environ,
            **(env or {}),
            "OPENAI_BASE_URL": model_url,
            "OPENAI_API_KEY": "test-key",
            "TEST_HOST": self.name,
            "TEST_HOOK_LOG": str(hook_log),
            "COLUMNS": "200",
        }
        with self.out.open("wb") as out:
            self.child = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                "import sys; from tether.cli import main; sys.exit(main())",
                "serve",
                *map(str, manifests),
                "--port",
                "0",
                "--quiet",
                "--cluster",
                redis_url,
                "--cluster-host",
                self.name,
                "--cluster-prefix",
                prefix,
                "--lease-ttl",
                f"{ttl}",
                env=env,
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = re.search(r"control API on (http://127\.0\.0\.1:\d+)", self.out.read_text())
            if found:
                self.url = found[1]
                return self
            if self.child.returncode is not None:
                break
            await asyncio.sleep(0.05)
        raise AssertionError(f"host {self.name} did not start:\n{self.out.read_text()}")

    def kill(self) -> None:
        self.signal(signal.SIGKILL)

    def signal(self, number: int) -> None:
        """Send ``number`` (SIGKILL, SIGSTOP, SIGCONT ...) to the host's OS process."""
        if self.child is not None and self.child.returncode is None:
            self.child.send_signal(number)

    async def stop(self) -> None:
        """SIGTERM (a clean stop: its processes are handed over), SIGKILL after 15 s."""
        if self.child is None:
            return
        if self.child.returncode is None:
            self.child.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.child.wait(), 15)
            except TimeoutError:
                self.child.send_signal(signal.SIGKILL)
        await self.child.wait()


class StallingLLM(FakeLLM):
    """A FakeLLM that answers the requests numbered in ``stall`` (1 for the first) only after
    an hour: the host asking is busy with that model call when a test kills or pauses it."""

    def __init__(self, **kwargs: Any) -> None:
        self.stall: set[int] = set()
        super().__init__(port=0, **kwargs)

    @property  # type: ignore[override]
    def latency(self) -> float:  # read once a request is recorded: its number is known
        return 3600.0 if len(self.requests) in self.stall else 0.0

    @latency.setter
    def latency(self, value: float) -> None:
        """(Not used: the stall says which requests wait.)"""


class RedisProxy:
    """A TCP proxy on a free loopback port in front of Redis; ``cut()`` closes the listener
    and every connection, so the host behind it is cut off from Redis."""

    def __init__(self, redis_url: str) -> None:
        target = urlparse(redis_url)
        self.target = (target.hostname or "127.0.0.1", target.port or 6379)
        self.path = target.path or "/0"
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}{self.path}"

    async def start(self) -> RedisProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        self._writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(Exception):
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    async def cut(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            with contextlib.suppress(Exception):
                writer.transport.abort()
        self._writers.clear()


def seq(prompt: str) -> int:
    """The ``n`` of the event a prompt was rendered from."""
    found = re.search(r"^n: (\d+)$", prompt, re.M)
    assert found is not None, prompt
    return int(found[1])


class PrivateRedis:
    """A redis-server of the test's own on a free loopback port, keeping nothing on disk, so
    that ``restart()`` brings it back empty (as after a crash without persistence)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.child: subprocess.Popen[bytes] | None = None
        self._started = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> PrivateRedis:
        """Start it (a restart: on the same port). On the first start, a port another program
        took between free_port() and the server's bind (a test running beside this one, under
        pytest-xdist) is replaced by a new free port."""
        for _ in range(1 if self._started else 3):
            if self._start_once():
                self._started = True
                return self
            if self._started:
                break
            self.port = free_port()
        raise AssertionError(f"redis-server did not start on port {self.port}")

    def _start_once(self) -> bool:
        """Start the server; True once it answers on the port as this very OS process (the
        pid its INFO gives), False if it could not take the port."""
        server = shutil.which("redis-server")
        if server is None:
            import pytest

            pytest.skip("these tests start a redis-server of their own: none is installed")
        child = self.child = subprocess.Popen(
            [
                server,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and child.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"INFO server\r\n")
                    answer = b""
                    while b"\r\nprocess_id:" not in answer or not answer.endswith(b"\r\n"):
                        data = sock.recv(65536)
                        if not data:
                            break
                        answer += data
                found = re.search(rb"\r\nprocess_id:(\d+)\r\n", answer)
                if found and int(found[1]) == child.pid:
                    return True
                if found:  # another program's server holds the port
                    break
            except OSError:
                time.sleep(0.02)
        child.kill()
        child.wait()
        self.child = None
        return False

    def kill(self) -> None:
        """SIGKILL: everything it held is gone."""
        if self.child is not None:
            self.child.kill()
            self.child.wait()
            self.child = None

    def restart(self) -> None:
        """Killed, then started again empty on the same port."""
        self.kill()
        self.start()
