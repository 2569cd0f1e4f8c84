"""Shared fixtures. Keep this small: a fixture belongs here only when several test files use it."""

from __future__ import annotations

import asyncio
import functools
import ssl
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import httpx
    from redis.asyncio import Redis

    from tether import AgentRuntime
    from tether.api import OrchestrationAPI
    from tether.testing import FakeLLM

#: Writes an executable Python script into the test's tmp_path and returns its absolute path.
ScriptFactory = Callable[..., str]

#: Installs a plugin distribution: ``install_plugin(source, entries)``, the module's name.
Install = Callable[..., str]

#: The keys of a hook-run record (``HookRun.as_dict()``), pinned here for every reader of runs.
HOOK_RUN_FIELDS = frozenset(
    {
        "recorded_at",
        "hook_id",
        "hook_name",
        "event",
        "process_id",
        "source",
        "mode",
        "outcome",
        "duration_ms",
        "error",
        "patch_applied",
        "dispatch_id",
        "dispatch_depth",
        "data_before",
        "data_after",
        "required",
        "duration_shared",
        "changes",
        "notice",
    }
)


@pytest.fixture
def make_script(tmp_path: Path) -> ScriptFactory:
    """Write ``body`` (dedented) as an executable script run by this interpreter."""

    def make(body: str, name: str = "hook.py") -> str:
        path = tmp_path / name
        path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
        path.chmod(0o755)
        return str(path)

    return make


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """Run ``tether ARGS...`` in this process, in a thread (an API may serve in the loop)."""
    from _cli_support import cli_in_thread

    return cli_in_thread(capsys, monkeypatch)


@pytest.fixture
def install_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Install]:
    """Install tiny distributions (a module of ``source`` and its .dist-info) declaring the
    ``tether.plugins`` entry points ``entries`` (lines; ``{module}`` is the module's name, the
    default names its AcmePlugin ``acme``); importlib.metadata finds them on sys.path. Each call
    returns its module's name."""
    modules: list[str] = []
    site = tmp_path / "site-packages"
    site.mkdir()

    def make(source: str, entries: str = "acme = {module}:AcmePlugin\n") -> str:
        module = f"acme_{uuid.uuid4().hex[:8]}"
        modules.append(module)
        (site / f"{module}.py").write_text(textwrap.dedent(source))
        dist = site / f"{module}-1.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n")
        (dist / "entry_points.txt").write_text("[tether.plugins]\n" + entries.format(module=module))
        return module

    monkeypatch.syspath_prepend(str(site))
    yield make
    for module in modules:
        sys.modules.pop(module, None)


@pytest.fixture
async def runtime() -> AsyncIterator[AgentRuntime]:
    """A started AgentRuntime with a shared HookManager, stopped after the test."""
    from tether import AgentRuntime, HookManager

    runtime = AgentRuntime(hooks=HookManager())
    await runtime.start_all()
    yield runtime
    await runtime.stop_all()


@pytest.fixture
async def api(runtime: AgentRuntime) -> AsyncIterator[OrchestrationAPI]:
    """The control API over ``runtime`` on a free loopback port (no webhook server; command
    hooks may be deployed), stopped after the test. A test file may define its own."""
    from tether.api import OrchestrationAPI

    api = OrchestrationAPI(runtime, port=0, webhooks=False, allow_command_deploys=True)
    await api.start()
    yield api
    await api.stop()


@pytest.fixture
async def client(api: OrchestrationAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of ``api``'s /api/v1."""
    import httpx

    async with httpx.AsyncClient(base_url=f"{api.url}/api/v1", verify=loopback_tls()) as client:
        yield client


@functools.cache
def loopback_tls() -> ssl.SSLContext:
    """One TLS context for the test clients of plain-HTTP loopback servers: httpx would load
    the CA bundle again for each client it makes (a tenth of a second each)."""
    return ssl.create_default_context()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "llm(openai_env=False, **attributes): set these FakeLLM attributes (reply, retry_after, "
        "...) on the `llm` fixture before the test; openai_env=True also does what the "
        "`openai_env` fixture does",
    )


def _name_in_openai_env(llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    llm.retry_after = None
    monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "not-a-real-key")


@pytest.fixture
async def llm(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[FakeLLM]:
    """A FakeLLM on a free loopback port, its retry-after short so the SDK's backoff between
    retries stays short. A test, class or module marked ``@pytest.mark.llm(reply="Done.")``
    gets these attributes set (``openai_env=True``: as the ``openai_env`` fixture gives it)."""
    from tether.testing import FakeLLM

    marker = request.node.get_closest_marker("llm")
    attributes = dict(marker.kwargs) if marker else {}
    in_env = attributes.pop("openai_env", False)
    async with FakeLLM(port=0) as server:
        server.retry_after = 0.01
        if in_env:
            _name_in_openai_env(server, monkeypatch)
        for name, value in attributes.items():
            setattr(server, name, value)
        yield server


@pytest.fixture
def openai_env(llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> FakeLLM:
    """The ``llm`` FakeLLM, named in OPENAI_BASE_URL (with a dummy key) so that processes with
    an ``openai:`` model reach it; its retry-after is left at FakeLLM's default."""
    _name_in_openai_env(llm, monkeypatch)
    return llm


@pytest.fixture
def write_pack(tmp_path: Path) -> Callable[..., Path]:
    """Write a scenario pack (``text`` dedented) into tmp_path; return its path (tests/eval)."""

    def write(text: str, name: str = "pack.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write


#: Seconds after which a test still running prints the stack of every asyncio task.
WATCHDOG = 120.0


def _dump_tasks(name: str) -> None:
    out = sys.__stderr__
    if out is None:
        return
    print(f"\n=== {name} still running after {WATCHDOG:g}s; its tasks:", file=out)
    for task in asyncio.all_tasks():
        print(f"--- {task!r}", file=out)
        # (Task.print_stack shows one frame of a suspended coroutine: walk the awaits.)
        awaited: Any = task.get_coro()
        while awaited is not None:
            frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
            if frame is not None:
                print(
                    f"    {frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}",
                    file=out,
                )
            awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    out.flush()


@pytest.fixture
async def task_watchdog(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """A test still running after WATCHDOG seconds prints where each of its asyncio tasks
    waits (pytest-timeout, later, prints only the loop's ``select``)."""
    handle = asyncio.get_running_loop().call_later(WATCHDOG, _dump_tasks, request.node.nodeid)
    yield
    handle.cancel()


@pytest.fixture
async def redis_url(task_watchdog: None) -> str:
    """A Redis that answers (see _redis_support): skips without one, fails under
    TETHER_REQUIRE_REDIS=1. The tests using it have a task watchdog."""
    from _redis_support import require_redis

    return await require_redis()


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[Redis]:
    """A client of the test Redis that answers text."""
    from redis.asyncio import Redis

    client = Redis.from_url(redis_url, decode_responses=True)
    yield client
    await client.aclose()


@pytest.fixture
async def redis_prefix(redis_url: str) -> AsyncIterator[str]:
    """A Redis key prefix of this test's own; its keys are deleted after the test."""
    from _redis_support import key_prefix

    async with key_prefix(redis_url) as name:
        yield name


@pytest.fixture
async def private_redis(task_watchdog: None) -> AsyncIterator[Any]:
    """A redis-server of the test's own on a free port (killed after the test): the cluster
    tests that restart, flush or kill it."""
    from _cluster_support import PrivateRedis

    server = PrivateRedis().start()
    try:
        yield server
    finally:
        server.kill()
