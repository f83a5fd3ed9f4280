"""zklock.metrics: clients' metrics as Prometheus families, read back
through prometheus_client's own expositions and parsers; the labels and
registries it refuses."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import prometheus_client
import prometheus_client.openmetrics.exposition
import pytest
import zklock
import zklock.metrics
from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families

#: Our families, as prometheus_client's parsers name them (no ``_total``).
FAMILIES = {
    "zklock_acquires",
    "zklock_acquire_wait_seconds",
    "zklock_hold_seconds",
    "zklock_suspensions",
    "zklock_losses",
    "zklock_reconnects",
    "zklock_session_expiries",
    "zklock_requests",
    "zklock_cleanups_pending",
}


def test_a_scrape_shows_the_clients_counts(hosts: str, path: str) -> None:
    registry = prometheus_client.CollectorRegistry()
    with zklock.Client(hosts) as zk:
        registry.register(zklock.metrics.Collector(zk, labels={"client": "a"}))
        lock = zk.lock(path)
        assert lock.acquire(timeout=5)
        assert not zk.lock(path).acquire(timeout=0.2)
        assert lock.release()
        assert lock.acquire(timeout=5)  # a second grant: 2, not 1 as the try
        assert lock.release()
        text = prometheus_client.generate_latest(registry).decode()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    a = (("client", "a"),)
    assert samples[("zklock_acquires_total", a + (("outcome", "granted"),))] == 2
    assert samples[("zklock_acquires_total", a + (("outcome", "timed_out"),))] == 1
    assert samples[("zklock_acquires_total", a + (("outcome", "failed"),))] == 0
    assert samples[("zklock_hold_seconds_count", a)] == 2
    assert samples[("zklock_hold_seconds_sum", a)] >= 0.2
    assert samples[("zklock_hold_seconds_bucket", (("client", "a"), ("le", "+Inf")))] == 2
    bounds = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 60.0, 300.0]
    counts = [samples[("zklock_hold_seconds_bucket", (("client", "a"), ("le", repr(b))))] for b in bounds]
    assert counts == sorted(counts) and counts[-1] <= 2, "cumulative buckets"
    assert counts[3] <= 1, "one hold lasted 0.2 s or more"
    assert samples[("zklock_acquire_wait_seconds_count", a)] == 2
    assert samples[("zklock_requests_total", (("client", "a"), ("op", "create2")))] >= 2
    assert ("zklock_cleanups_pending", a) in samples
    assert samples[("zklock_losses_total", a)] == 0


def _two_clients(hosts: str, path: str) -> Tuple[prometheus_client.CollectorRegistry, zklock.Client, zklock.Client]:
    """A registry with two clients (labels client=a and client=b); a took
    the lock at ``path`` once, b twice."""
    registry = prometheus_client.CollectorRegistry()
    a, b = zklock.Client(hosts), zklock.Client(hosts)
    zklock.metrics.register_client(a, registry, labels={"client": "a"})
    zklock.metrics.register_client(b, registry=registry, labels={"client": "b"})
    for zk, n in [(a, 1), (b, 2)]:
        for _ in range(n):
            with zk.lock(path):
                pass
    return registry, a, b


def _check_families(families: List[Metric]) -> None:
    """Each of our families once, each with both clients' samples."""
    names = [f.name for f in families]
    assert sorted(names) == sorted(set(names)), names
    assert set(names) == set(FAMILIES), names
    granted = {
        s.labels["client"]: s.value
        for f in families
        for s in f.samples
        if s.name == "zklock_acquires_total" and s.labels["outcome"] == "granted"
    }
    assert granted == {"a": 1, "b": 2}
    for f in families:
        clients = {s.labels.get("client") for s in f.samples}
        assert clients == {"a", "b"}, (f.name, clients)


def test_two_clients_in_one_registry_write_each_family_once(hosts: str, path: str) -> None:
    registry, a, b = _two_clients(hosts, path)
    with a, b:
        om = prometheus_client.openmetrics.exposition.generate_latest(registry).decode()
        text = prometheus_client.generate_latest(registry).decode()
    # OpenMetrics' parser refuses a family written twice ("Clashing name").
    _check_families(list(openmetrics_families(om)))
    _check_families(list(text_string_to_metric_families(text)))
    assert text.count("# HELP zklock_hold_seconds ") == 1


def test_unregister_takes_a_client_out_and_the_last_the_metrics(hosts: str, path: str) -> None:
    registry = prometheus_client.CollectorRegistry()
    with zklock.Client(hosts) as a, zklock.Client(hosts) as b:
        first = zklock.metrics.register_client(a, registry, labels={"client": "a"})
        second = zklock.metrics.register_client(b, registry, labels={"client": "b"})
        first.unregister()
        first.unregister()  # idempotent
        clients = {s.labels["client"] for f in registry.collect() for s in f.samples}
        assert clients == {"b"}
        second.unregister()
        assert list(registry.collect()) == []
        # The registry is free again: a Collector by hand, or clients anew.
        registry.register(zklock.metrics.Collector(a))
        with pytest.raises(zklock.InvalidArgument):
            zklock.metrics.register_client(b, registry)


@pytest.mark.parametrize(
    "labels",
    [{"outcome": "x"}, {"op": "x"}, {"le": "x"}, {"__x": "y"}, {"": "y"}, {"a-b": "y"}, {"1a": "y"}, {5: "y"}],
)
def test_label_names_that_cannot_be_used_are_refused(hosts: str, labels: Dict[Any, str]) -> None:
    registry = prometheus_client.CollectorRegistry()
    with zklock.Client(hosts) as zk:
        with pytest.raises(zklock.InvalidArgument) as raised:
            zklock.metrics.register_client(zk, registry, labels=labels)
        assert raised.value.code == "INVALID_ARGUMENT"
        with pytest.raises(zklock.InvalidArgument):
            zklock.metrics.Collector(zk, labels)
        assert list(registry.collect()) == [], "nothing added"


def test_label_values_and_clients_of_other_types_are_refused(hosts: str) -> None:
    registry = prometheus_client.CollectorRegistry()
    with zklock.Client(hosts) as zk:
        for labels in [{"a": 5}, {"a": None}, {"a": b"x"}]:
            with pytest.raises(TypeError):
                zklock.metrics.register_client(zk, registry, labels=labels)  # type: ignore[dict-item]
            with pytest.raises(TypeError):
                zklock.metrics.Collector(zk, labels)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            zklock.metrics.register_client(zk, registry, labels=[("a", "b")])  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            zklock.metrics.register_client(object(), registry)  # type: ignore[arg-type]
        assert list(registry.collect()) == [], "nothing added"


def test_clients_of_one_registry_need_the_same_label_names_and_other_values(hosts: str) -> None:
    registry = prometheus_client.CollectorRegistry()
    with zklock.Client(hosts) as a, zklock.Client(hosts) as b:
        zklock.metrics.register_client(a, registry, labels={"client": "a", "dc": "x"})
        for labels in [{"client": "b"}, {"client": "b", "zone": "x"}, {}, {"client": "a", "dc": "x"}]:
            with pytest.raises(zklock.InvalidArgument):
                zklock.metrics.register_client(b, registry, labels=labels)
        zklock.metrics.register_client(b, registry, labels={"dc": "x", "client": "b"})
        clients = sorted(
            (s.labels["client"], s.labels["dc"])
            for f in registry.collect()
            for s in f.samples
            if f.name == "zklock_losses"
        )
        assert clients == [("a", "x"), ("b", "x")]


def test_a_second_collector_or_a_foreign_metric_of_our_names_is_refused(hosts: str) -> None:
    with zklock.Client(hosts) as a, zklock.Client(hosts) as b:
        registry = prometheus_client.CollectorRegistry()
        registry.register(zklock.metrics.Collector(a, {"client": "a"}))
        # The F3 case: it wrote every family twice; the registry refuses it now.
        with pytest.raises(ValueError, match="Duplicated timeseries"):
            registry.register(zklock.metrics.Collector(b, {"client": "b"}))
        with pytest.raises(zklock.InvalidArgument):
            zklock.metrics.register_client(b, registry, labels={"client": "b"})

        registry = prometheus_client.CollectorRegistry()
        prometheus_client.Gauge("zklock_cleanups_pending", "not ours", registry=registry)
        with pytest.raises(zklock.InvalidArgument):
            zklock.metrics.register_client(a, registry)
