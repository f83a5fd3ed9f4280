"""zklock.metrics.Collector: a client's metrics as Prometheus families,
read back through prometheus_client's own exposition and parser."""

from __future__ import annotations

import prometheus_client
import zklock
import zklock.metrics
from prometheus_client.parser import text_string_to_metric_families


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
