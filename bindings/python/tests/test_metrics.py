"""Client.metrics(): the core's counters and histograms, typed."""

from __future__ import annotations

import zklock


def test_a_grant_a_timed_out_try_and_a_release_are_counted(hosts: str, path: str) -> None:
    with zklock.Client(hosts) as zk, zklock.Client(hosts) as other:
        m = zk.metrics()
        assert isinstance(m, zklock.Metrics)
        assert (m.acquires_granted, m.acquires_timed_out, m.hold_time.count) == (0, 0, 0)
        lock = zk.lock(path)
        assert lock.acquire(timeout=5)
        assert not other.lock(path).acquire(blocking=False)
        assert not zk.lock(path).acquire(timeout=0.2)
        assert lock.release()
        m = zk.metrics()
        assert m.acquires_granted == 1
        assert m.acquires_timed_out == 1
        assert (m.acquires_cancelled, m.acquires_failed, m.losses) == (0, 0, 0)
        assert m.wait_time.count == 1 and m.hold_time.count == 1
        assert m.hold_time.sum_seconds >= 0.2
        for h in (m.wait_time, m.hold_time):
            assert isinstance(h, zklock.Histogram)
            assert len(h.buckets) == 11
            bounds = [b for b, _ in h.buckets]
            counts = [n for _, n in h.buckets]
            assert bounds == sorted(bounds) and bounds[-1] == 300.0
            assert counts == sorted(counts) and counts[-1] <= h.count, "cumulative"
        assert m.requests.get("create2", 0) >= 2, m.requests
        assert other.metrics().acquires_timed_out == 1
    after = zk.metrics()  # also after close
    assert after.acquires_granted == 1
