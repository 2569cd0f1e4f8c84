"""``tether serve --cluster``: its options are checked before anything starts."""

from __future__ import annotations

import pytest

from _cli_support import run_cli
from _net_support import free_port
from tether.cluster import ClusterNode
from tether.store._redis import Keys


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
