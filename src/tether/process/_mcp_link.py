"""A process's connections to its MCP servers, through the official ``mcp`` SDK.

One McpLink per declared server, each kept up by a task of its own (every anyio context of a
connection is entered and left in that task). Its states::

    connecting ──▶ connected ──(lost: it exited, a call or a ping failed)──▶ reconnecting
        │              ▲                                                        │
        └──(failed)────┴──────────── backoff BACKOFF_START .. BACKOFF_MAX ◀──────┘
    closed: removed, or the process stopped (its program and its whole group are gone)

While connected, each tool of the server is a ``tether.agent.Tool`` named
``mcp__<server>__<tool>`` (``server=<server>``, the server's input schema as parameters) in
the agent loop, so a call goes through the loop's tool path like any tool's. When the
connection is lost its tools leave the loop; a call already holding one gets a clear error
(McpServerUnavailableError), never a hang: every call is bounded by the entry's ``timeout`` or
the process's tool timeout. The tool list is read again on each reconnect and when the server
says it changed.

The SDK is imported here only, and this module only when a process connects to a server.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Final, cast

import anyio
from pydantic import SecretStr

from ..agent import Tool
from ..errors import TetherError
from ._mcp import McpServerConfig
from ._mcp_stdio import StdioProgram, kill_group, minimal_env, program_argv, stdio_transport

if TYPE_CHECKING:
    from mcp import ClientSession
    from mcp.types import RequestParamsMeta

    from .._redact import Redactor
    from ..agent import AgentLoop

__all__ = [
    "McpConnections",
    "McpLink",
    "McpServerUnavailableError",
    "McpToolError",
    "mcp_tool_name",
]

logger = logging.getLogger("tether.process")

#: Seconds before the first reconnect; doubled after each failed attempt, up to BACKOFF_MAX.
BACKOFF_START: Final = 0.5
BACKOFF_MAX: Final = 30.0
#: Seconds one attempt may take to start, initialize and list the tools of a server.
CONNECT_TIMEOUT: Final = 30.0
#: Seconds between pings of an idle connection, and how long a ping may take.
PING_INTERVAL: Final = 5.0
PING_TIMEOUT: Final = 10.0
#: Seconds a close waits for a connection to end before killing what is left of it.
CLOSE_TIMEOUT: Final = 5.0
#: Longest tool name the model APIs accept.
_NAME_MAX: Final = 64
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")


class McpToolError(TetherError):
    """An MCP tool answered with an error (``isError``), or its server refused the call."""


class McpServerUnavailableError(McpToolError):
    """The tool's MCP server is not connected now (it is being reconnected, or was removed)."""


def mcp_tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, each character the model APIs refuse in a tool name made
    ``_``; a name past 64 characters keeps its first 55 and a hash of the whole."""
    full = f"mcp__{server}__{tool}"
    name = _NOT_ALLOWED.sub("_", full)
    if len(name) > _NAME_MAX:
        digest = hashlib.sha1(full.encode(), usedforsecurity=False).hexdigest()[:8]
        name = f"{name[: _NAME_MAX - 9]}_{digest}"
    return name


def _resolved(values: dict[str, Any], field: str, server: str) -> dict[str, str]:
    """An entry's ``env`` or ``headers``: SecretStr values read, ``${VAR}`` resolved now."""
    import os

    from ..hooks import HookError, resolve_refs

    out = {}
    for key, raw in values.items():
        text = raw.get_secret_value() if isinstance(raw, SecretStr) else str(raw)
        try:
            out[key] = resolve_refs(text, os.environ, "")
        except HookError as exc:
            reason = str(exc).lstrip(": ")
            raise ValueError(f"mcp_servers[{server!r}].{field}.{key}: {reason}") from None
    return out


def _without_userinfo(url: str) -> tuple[str, Any]:
    """``url`` without its ``user:password@``, and an httpx2.BasicAuth of them (or None)."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    import httpx2

    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc = f"{netloc}:{parts.port}"
    plain = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    return plain, httpx2.BasicAuth(user, password)


def _block_text(block: dict[str, Any]) -> str:
    """What the model reads of one content block of a tool result."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        size = len(str(block.get("data", ""))) * 3 // 4
        return f"[{kind} {block.get('mimeType', 'of unknown type')}, about {size} bytes]"
    if kind == "resource_link":
        return f"[resource {block.get('name') or ''} {block.get('uri', '')}]".replace("  ", " ")
    if kind == "resource":
        resource = block.get("resource") or {}
        if "text" in resource:
            return str(resource["text"])
        return f"[resource {resource.get('uri', '')}, {resource.get('mimeType', 'binary')}]"
    return json.dumps(block, ensure_ascii=False, default=str)


def result_text(result: Any) -> str:
    """The text of a CallToolResult: its content blocks joined by newlines, its structured
    content as JSON when it has no content; McpToolError with that text when ``isError``."""
    wire: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    text = "\n".join(_block_text(b) for b in wire.get("content") or [] if isinstance(b, dict))
    structured = wire.get("structuredContent")
    if not text and structured is not None:
        text = json.dumps(structured, ensure_ascii=False, default=str)
    if wire.get("isError"):
        raise McpToolError(text or "the tool reported an error and gave no message")
    return text


class McpLink:
    """One MCP server of a process, and the task keeping its connection up."""

    def __init__(
        self,
        entry: dict[str, Any],
        *,
        tool_timeout: float,
        redactor: Redactor,
        tools_changed: Callable[[McpLink, list[str]], None],
    ) -> None:
        self.entry = entry
        self.config = McpServerConfig.model_validate(entry)
        self.name = self.config.name
        self.state = "connecting"
        self.last_error: str | None = None
        #: The server's tools as the loop offers them, by their tether name.
        self.tools: dict[str, Tool] = {}
        self.connects = 0
        self.attempts = 0
        #: The pid of the program of a stdio server while it runs (its process group's id).
        self.pid: int | None = None
        self._timeout = self.config.timeout or tool_timeout
        self._redactor = redactor
        self._redact = redactor.text
        self._tools_changed = tools_changed
        self._session: ClientSession | None = None
        self._lost: str | None = None  # why the current connection is over
        self._relist = False
        self._wake: anyio.Event | None = None
        self._attempted = asyncio.Event()  # the first attempt ended (either way)
        self._closing = False
        self._scope = anyio.CancelScope()
        self._task: asyncio.Task[None] | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"mcp-{self.name}")

    async def first_attempt(self, timeout: float) -> None:
        """Wait until the first attempt to connect ended (connected or failed), or ``timeout``."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._attempted.wait()

    async def aclose(self) -> None:
        """End the connection: the session closed, a stdio server's whole group gone."""
        self._closing = True
        self._scope.cancel()
        task = self._task
        if task is not None and not task.done():
            done, _ = await asyncio.wait([task], timeout=CLOSE_TIMEOUT)
            if not done:  # a connection that would not end: cut it off, its group killed
                if self.pid is not None:
                    kill_group(self.pid)
                task.cancel()
                await asyncio.wait([task], timeout=CLOSE_TIMEOUT)
        self.state = "closed"
        self._session = None
        self._drop_tools()

    async def _run(self) -> None:
        delay = BACKOFF_START
        with self._scope:
            while not self._closing:
                self.attempts += 1
                connects = self.connects
                try:
                    await self._connection()
                except Exception as exc:  # (a program's exit says more than its closed pipe)
                    self.last_error = self._redact(self._lost or _describe(exc))
                else:
                    self.last_error = self._redact(self._lost or "the connection ended")
                finally:
                    self._session = None
                    self._drop_tools()
                    self._attempted.set()
                if self._closing:
                    break
                if self.connects > connects:
                    delay = BACKOFF_START  # it was up: start the backoff over
                self.state = "reconnecting"
                logger.warning(
                    "MCP server %r: %s; reconnecting in %gs", self.name, self.last_error, delay
                )
                await anyio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)
        self.state = "closed"

    async def _connection(self) -> None:
        """One connection, from its start until it is lost (raises when it cannot start)."""
        from mcp import ClientSession

        self._lost = None
        self._relist = False
        self._wake = anyio.Event()
        async with (
            self._transport() as (read, write),
            ClientSession(read, write, message_handler=self._on_message) as session,
        ):
            with anyio.fail_after(CONNECT_TIMEOUT):
                await session.initialize()
                listed = await _list_tools(session)
            if self._lost is not None:
                return
            self._session = session
            self.state = "connected"
            self.last_error = None
            self.connects += 1
            self._install(listed)
            self._attempted.set()
            await self._watch(session)

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        config = self.config
        headers = self._secret(_resolved(config.headers, "headers", self.name))
        if config.transport == "stdio":
            assert config.command is not None
            env = minimal_env(self._secret(_resolved(config.env, "env", self.name)))
            argv = program_argv(config.command, config.args)
            ended: list[StdioProgram] = []
            try:
                async with stdio_transport(
                    argv, env=env, cwd=config.cwd, on_end=self._program_ended
                ) as (read, write, program):
                    self.pid = program.pid
                    ended.append(program)
                    try:
                        yield read, write
                    finally:
                        self.pid = None
            finally:
                if ended:
                    self._program_gone(ended[0])
            return
        assert config.url is not None
        import httpx2

        # A password in the url goes as basic auth: the url the SDK and httpx2 log has none.
        url, auth = _without_userinfo(config.url)
        if config.transport == "sse":
            from mcp.client.sse import sse_client

            async with sse_client(url, headers=headers, auth=auth) as (read, write):
                yield read, write
            return
        from mcp.client.streamable_http import streamable_http_client

        timeout = httpx2.Timeout(30.0, read=300.0)
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout, auth=auth) as client,
            streamable_http_client(url, http_client=client) as (read, write),
        ):
            yield read, write

    def _secret(self, values: dict[str, str]) -> dict[str, str]:
        """``values`` (env or headers, ${VAR} resolved), each declared a secret of the process:
        no record, log or answer shows one."""
        self._redactor.declare((f"mcp.{self.name}.{k}", v) for k, v in values.items() if v)
        return values

    async def _watch(self, session: ClientSession) -> None:
        """Until the connection is lost: the tool list read again when the server says it
        changed, and a ping after each PING_INTERVAL of quiet."""
        while self._lost is None:
            wake = self._wake
            assert wake is not None
            with anyio.move_on_after(PING_INTERVAL) as waiting:
                await wake.wait()
            quiet = waiting.cancelled_caught
            if self._lost is not None:
                return
            if wake.is_set():
                self._wake = anyio.Event()
            try:
                if self._relist:
                    self._relist = False
                    with anyio.fail_after(PING_TIMEOUT):
                        self._install(await _list_tools(session))
                elif quiet:
                    with anyio.fail_after(PING_TIMEOUT):
                        await session.send_ping()
            except Exception as exc:
                self.lose(f"it did not answer ({_describe(exc)})")

    def lose(self, why: str) -> None:
        """The connection is over (``why``): the task reconnects."""
        if self._lost is None:
            self._lost = why
            self._session = None
            self._drop_tools()
        if self._wake is not None:
            self._wake.set()

    def _program_ended(self, program: StdioProgram) -> None:
        if not self._closing:
            self.lose("the server's program closed its output")

    def _program_gone(self, program: StdioProgram) -> None:
        """Say how a stdio server's program ended, once it is reaped."""
        if self._closing or program.returncode is None:
            return
        why = f"the server's program exited with code {program.returncode}"
        tail = program.stderr_tail()
        self._lost = f"{why}: {tail}" if tail else why

    async def _on_message(self, message: Any) -> None:
        from mcp.types import ToolListChangedNotification

        if isinstance(getattr(message, "root", message), ToolListChangedNotification):
            self._relist = True
            if self._wake is not None:
                self._wake.set()

    # -- tools -----------------------------------------------------------------------------

    def _install(self, listed: list[dict[str, Any]]) -> None:
        before = list(self.tools)
        tools: dict[str, Tool] = {}
        for spec in listed:
            remote = spec.get("name")
            if not isinstance(remote, str) or not remote:
                continue
            name = mcp_tool_name(self.name, remote)
            if name in tools:
                logger.warning(
                    "MCP server %r: tool %r is offered as %r, as another one is: skipped",
                    self.name,
                    remote,
                    name,
                )
                continue
            schema = spec.get("inputSchema")
            tools[name] = Tool(
                name=name,
                fn=self._caller(remote),
                description=str(spec.get("description") or ""),
                parameters=schema if isinstance(schema, dict) else {"type": "object"},
                server=self.name,
            )
        self.tools = tools
        self._tools_changed(self, before)

    def _drop_tools(self) -> None:
        if self.tools:
            before = list(self.tools)
            self.tools = {}
            self._tools_changed(self, before)

    def _caller(self, remote: str) -> Callable[..., Any]:
        async def call(**arguments: Any) -> str:
            return await self.call(remote, arguments)

        call.__name__ = remote
        return call

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """Call ``tool`` of the server; its text, or McpToolError with the reason."""
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        session = self._session
        if session is None:
            raise McpServerUnavailableError(self._unavailable(tool))
        try:
            result = await session.call_tool(
                tool, arguments, read_timeout_seconds=self._timeout, meta=_meta()
            )
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED and self._closing:
                raise McpServerUnavailableError(self._unavailable(tool)) from None
            if exc.code == CONNECTION_CLOSED:
                self.lose(f"the connection closed during a call of {tool!r}")
                raise McpServerUnavailableError(
                    f"MCP server {self.name!r} went away during the call of {tool!r}; "
                    "it is being reconnected"
                ) from None
            if exc.code == REQUEST_TIMEOUT:
                raise McpToolError(
                    f"MCP server {self.name!r} did not answer the call of {tool!r} within "
                    f"{self._timeout:g}s"
                ) from None
            raise McpToolError(
                f"MCP server {self.name!r} refused the call of {tool!r}: {exc.message}"
            ) from None
        except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            self.lose(f"a call of {tool!r} failed ({_describe(exc)})")
            raise McpServerUnavailableError(
                f"MCP server {self.name!r} could not be reached for the call of {tool!r} "
                f"({self._redact(_describe(exc))}); it is being reconnected"
            ) from None
        return result_text(result)

    def _unavailable(self, tool: str) -> str:
        why = f": {self.last_error}" if self.last_error else ""
        if self._closing:
            return f"MCP server {self.name!r} was removed or stopped; {tool!r} cannot be called"
        return (
            f"MCP server {self.name!r} is not connected ({self.state}{why}); "
            f"{tool!r} cannot be called until it is back"
        )

    def status(self) -> dict[str, Any]:
        """The server's state for status(): JSON-ready, its error redacted."""
        return {
            "transport": self.config.transport,
            "state": self.state,
            "tools": len(self.tools),
            "tool_names": sorted(self.tools),
            "last_error": self.last_error,
            "connects": self.connects,
            "attempts": self.attempts,
        }


async def _list_tools(session: ClientSession) -> list[dict[str, Any]]:
    """Every tool of the server (each page), as wire dicts (``inputSchema`` and so on)."""
    from mcp.types import PaginatedRequestParams

    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params = PaginatedRequestParams(cursor=cursor) if cursor is not None else None
        page = await session.list_tools(params=params)
        tools += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return tools


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "it did not answer in time"
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class McpConnections:
    """The MCP servers of one process: connected from its start to its stop.

    Until ``open()`` (and after ``aclose()``) the declared entries are only configuration.
    """

    def __init__(self, process_name: str, redactor: Redactor) -> None:
        self.process_name = process_name
        self._redactor = redactor
        self.links: dict[str, McpLink] = {}
        self._loop: AgentLoop | None = None
        self._tool_timeout = 120.0

    @property
    def is_open(self) -> bool:
        return self._loop is not None

    async def open(
        self, loop: AgentLoop, entries: list[dict[str, Any]], tool_timeout: float
    ) -> None:
        """Connect every entry; return once each has connected or failed a first time (it is
        then retried in the background), CONNECT_TIMEOUT at most."""
        self._loop = loop
        self._tool_timeout = tool_timeout
        await self.sync(entries)

    async def sync(self, entries: list[dict[str, Any]]) -> None:
        """Make the connections match ``entries`` (when open): a server no longer declared,
        or declared differently, is closed; a new one is connected (its first attempt awaited,
        CONNECT_TIMEOUT at most)."""
        if self._loop is None:
            return
        wanted = {e["name"]: e for e in entries if isinstance(e.get("name"), str)}
        gone = [
            link
            for name, link in self.links.items()
            if name not in wanted or wanted[name] != link.entry
        ]
        for link in gone:
            del self.links[link.name]
        await asyncio.gather(*(link.aclose() for link in gone))
        if self._loop is None:  # closed meanwhile (the process stopped): connect nothing
            return
        new = []
        for name, entry in wanted.items():
            if name not in self.links:
                link = McpLink(
                    entry,
                    tool_timeout=self._tool_timeout,
                    redactor=self._redactor,
                    tools_changed=self._tools_changed,
                )
                self.links[name] = link
                link.start()
                new.append(link)
        await asyncio.gather(*(link.first_attempt(CONNECT_TIMEOUT) for link in new))

    async def aclose(self) -> None:
        """Close every connection (their programs and groups gone); the tools leave the loop."""
        links = list(self.links.values())
        self.links.clear()
        await asyncio.gather(*(link.aclose() for link in links))
        self._loop = None

    def _tools_changed(self, link: McpLink, before: list[str]) -> None:
        loop = self._loop
        if loop is None:
            return
        for name in before:
            if name not in link.tools and getattr(loop.tools.get(name), "server", None):
                loop.remove_tool(name)
        for name, tool in link.tools.items():
            held = loop.tools.get(name)
            if held is not None and held.server != link.name:
                logger.warning(
                    "process %s: MCP tool %r of server %r not offered: a tool of that name "
                    "exists already",
                    self.process_name,
                    name,
                    link.name,
                )
                continue
            loop.add_tool(tool)

    def status(self) -> dict[str, dict[str, Any]]:
        return {name: link.status() for name, link in sorted(self.links.items())}


def _meta() -> RequestParamsMeta | None:
    """The call's ``_meta``: the idempotency key of the tool call running (see
    ``tether.current_tool_call``) as ``tether/idempotency_key``."""
    from ..agent import current_tool_call

    info = current_tool_call()
    if info is None:
        return None
    return cast("RequestParamsMeta", {"tether/idempotency_key": info.idempotency_key})
