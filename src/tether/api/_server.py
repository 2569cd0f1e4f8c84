"""Serving an ASGI app with uvicorn inside the caller's event loop.

The socket is bound here, so a busy port fails ``start()`` with ``OSError`` instead of uvicorn's
``sys.exit``; uvicorn's signal handlers are left out, so Ctrl-C still reaches the program.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from typing import Any, Final

import uvicorn

__all__ = ["AppServer", "bind"]

#: Seconds in-flight requests get at stop() before they are cancelled.
GRACE: Final = 3


#: How often uvicorn's loop looks at its state (and refreshes the Date header) while serving.
TICK: Final = 0.1


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handlers, telling when it listens, and stopping as
    soon as it is told to (``exit()``) rather than at its next tick."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()
        self._exiting = asyncio.Event()

    def exit(self) -> None:
        """Stop accepting and shut down (see AppServer.stop)."""
        self.should_exit = True
        self._exiting.set()

    async def main_loop(self) -> None:
        # uvicorn's loop, woken by exit() instead of sleeping out its tick.
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864_000
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TICK):
                    await self._exiting.wait()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.server_state.connections or self.server_state.tasks:
            await super().shutdown(sockets=sockets)  # lets in-flight requests finish (grace)
            return
        # Nothing in flight: close the listeners without uvicorn's pause for connections.
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        if not self.force_exit:
            await self.lifespan.shutdown()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # Inside someone else's program, uvicorn's own handlers would turn Ctrl-C into "stop
        # this server" instead of an interrupt of the program.
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        self.listening.set()


async def _serve(server: _Server, sock: socket.socket) -> None:
    try:
        await server.serve(sockets=[sock])
    finally:
        # When the task is cancelled instead of stopped (asyncio.run ending on Ctrl-C, say),
        # uvicorn's shutdown never runs: close the listener here so no socket is left open.
        for listener in getattr(server, "servers", ()):
            listener.close()
        sock.close()


def bind(host: str, port: int) -> socket.socket:
    """A listening-ready socket on host:port (port 0: any free port); OSError names both."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Accepted connections inherit it: uvicorn writes a response's head and body apart,
        # and with Nagle on the body waits for the client's delayed ACK (~40 ms a request).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror}") from None
    return sock


class AppServer:
    """One ASGI app served on one socket, as a task of the running loop."""

    def __init__(self, app: Any, host: str, port: int, *, name: str, grace: float = GRACE) -> None:
        self.app = app
        self.host = host
        self.port = port
        self.name = name
        self.grace = grace
        self._server: _Server | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None

    async def start(self) -> None:
        """Listen and serve; return once the socket accepts connections."""
        if self._task is not None:
            raise RuntimeError(f"{self.name} is already running on {self.host}:{self.port}")
        sock = bind(self.host, self.port)
        config = uvicorn.Config(
            self.app,
            lifespan="off",
            http="h11",
            ws="none",
            log_config=None,  # leave the program's logging configuration alone
            access_log=False,
            server_header=False,
            timeout_graceful_shutdown=self.grace,  # type: ignore[arg-type]
        )
        server = _Server(config)
        task = asyncio.create_task(_serve(server, sock), name=self.name)
        listening = asyncio.create_task(server.listening.wait())
        try:
            await asyncio.wait({task, listening}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # cancelled while starting: leave no server behind
            server.should_exit = True
            with contextlib.suppress(BaseException):
                await task
            sock.close()
            raise
        finally:
            listening.cancel()
        if task.done():
            sock.close()
            task.result()
            raise RuntimeError(f"{self.name} stopped while starting")
        self.port = sock.getsockname()[1]
        self._server, self._task = server, task

    async def stop(self) -> None:
        """Stop accepting, let in-flight requests finish (up to GRACE seconds), then return."""
        server, task = self._server, self._task
        if server is None or task is None:
            return
        server.exit()
        try:
            await task
        finally:
            self._server = self._task = None
