"""Placement: rendezvous hashing with bounded loads spreads a cluster's processes evenly over
its live hosts, the same on every host."""

from __future__ import annotations

from collections import Counter

import pytest

from tether.cluster import placement, rendezvous

NAMES = [f"bench{i}" for i in range(6)]


@pytest.mark.parametrize("hosts", [["h0", "h1"], ["h0", "h1", "h2"], ["a", "b", "c", "d"]])
def test_each_host_runs_as_many_processes_give_or_take_one(hosts: list[str]) -> None:
    """Regression: plain rendezvous put four of these six processes on h0 of two hosts, and
    that host bounded the cluster's throughput (1.5x one host's, not 2x)."""
    loads = Counter(placement(NAMES, hosts).values())
    assert set(loads) == set(hosts)
    assert max(loads.values()) - min(loads.values()) <= 1


def test_every_host_computes_the_same_placement_whatever_the_order_it_lists() -> None:
    assert placement(NAMES, ["h0", "h1", "h2"]) == placement(NAMES[::-1], ["h2", "h0", "h1"])


def test_a_process_alone_goes_where_rendezvous_says() -> None:
    for hosts in (["east", "west"], ["h0", "h1", "h2"]):
        assert placement(["solo"], hosts) == {"solo": rendezvous("solo", hosts)}


def test_no_live_host_places_nothing() -> None:
    assert placement(NAMES, []) == {}
