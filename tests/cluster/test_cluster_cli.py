"""``tether serve --cluster``: its options are checked before anything starts."""

from __future__ import annotations

import os
import signal
import sys
import uuid
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import pytest

from _cli_support import run_cli, running
from _net_support import free_port
from tether.cluster import ClusterNode
from tether.store._redis import Keys

if TYPE_CHECKING:
    from redis.asyncio import Redis

pytestmark = pytest.mark.slow


def test_serve_refuses_a_cluster_url_that_is_not_redis(capsys: pytest.CaptureFixture[str]) -> None:
    done = run_cli(capsys, "serve", "--cluster", "http://127.0.0.1:6379")
    assert done.returncode == 2
    assert "--cluster" in done.stderr
    assert "http://127.0.0.1:6379" in done.stderr


def test_serve_refuses_a_lease_ttl_below_its_minimum(capsys: pytest.CaptureFixture[str]) -> None:
    done = run_cli(capsys, "serve", "--cluster", "redis://127.0.0.1:6379", "--lease-ttl", "0.1")
    assert done.returncode == 2
    assert "--lease-ttl" in done.stderr


def test_a_cluster_key_prefix_with_spaces_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="'my cluster'"):
        Keys("my cluster")


def test_a_node_refuses_a_host_name_with_a_colon() -> None:
    from tether import AgentRuntime

    with pytest.raises(ValueError, match="'a:b'"):
        ClusterNode(AgentRuntime(), "redis://127.0.0.1:6379", host="a:b")


def test_serve_with_an_unreachable_redis_fails_naming_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    done = run_cli(capsys, "serve", "--port", "0", "--cluster", url)
    assert done.returncode == 1
    assert f"cannot reach the cluster's Redis at {url}" in done.stderr


def test_serve_with_an_unreachable_redis_never_prints_its_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Regression: the "cannot reach" error printed the Redis URL with its password."""
    port = free_port()
    done = run_cli(
        capsys, "serve", "--port", "0", "--cluster", f"redis://:pw-7f3c9e@127.0.0.1:{port}/0"
    )
    assert done.returncode == 1
    assert f"cannot reach the cluster's Redis at redis://:****@127.0.0.1:{port}/0" in done.stderr
    assert "pw-7f3c9e" not in done.stdout + done.stderr


def test_serve_refuses_a_cluster_url_that_is_not_redis_without_echoing_its_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    done = run_cli(capsys, "serve", "--cluster", "http://app:pw-51d2@127.0.0.1:6379")
    assert done.returncode == 2
    assert "http://app:****@127.0.0.1:6379" in done.stderr
    assert "pw-51d2" not in done.stdout + done.stderr


async def test_serve_cluster_startup_line_shows_the_redis_password_masked(
    redis: Redis, redis_url: str, redis_prefix: str
) -> None:
    """Regression: ``tether serve --cluster`` printed the Redis URL, password and all."""
    user, password = f"tether-test-{uuid.uuid4().hex[:8]}", "pw-" + uuid.uuid4().hex
    await redis.execute_command("ACL", "SETUSER", user, "on", f">{password}", "~*", "&*", "+@all")
    parts = urlsplit(redis_url)
    url = f"redis://{user}:{password}@{parts.hostname}:{parts.port or 6379}{parts.path}"
    argv = ["-c", "import sys; from tether.cli import main; sys.exit(main())", "serve"]
    options = ["--port", "0", "--quiet", "--cluster", url, "--cluster-prefix", redis_prefix]
    try:
        async with running(sys.executable, *argv, *options, env=dict(os.environ)) as serve:
            await serve.read_until("Ctrl-C")
            out, err = await serve.stop(signal.SIGTERM)
    finally:
        await redis.execute_command("ACL", "DELUSER", user)
    printed = "".join(serve.seen) + out + err
    assert f"on redis://{user}:****@{parts.hostname}:" in printed
    assert password not in printed
