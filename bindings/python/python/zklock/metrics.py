"""A Prometheus collector of a client's metrics (``prometheus_client``).

::

    from prometheus_client import REGISTRY, start_http_server
    import zklock.metrics

    REGISTRY.register(zklock.metrics.Collector(zk))
    start_http_server(9100)

Each scrape takes one :meth:`zklock.Client.metrics` snapshot and yields:

- ``zklock_acquires_total{outcome="granted"|"timed_out"|"cancelled"|"failed"}``
- ``zklock_acquire_wait_seconds`` and ``zklock_hold_seconds`` (histograms)
- ``zklock_suspensions_total``, ``zklock_losses_total``,
  ``zklock_reconnects_total``, ``zklock_session_expiries_total``
- ``zklock_requests_total{op="create2"|"getData"|...}``
- ``zklock_cleanups_pending`` (a gauge)

``prometheus_client`` is not a dependency of zklock: it is imported when a
scrape collects, so importing this module does not need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Iterator, Optional

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric
    from prometheus_client.registry import Collector as _Base

    from . import Client, Histogram
else:
    _Base = object

__all__ = ["Collector"]


class Collector(_Base):
    """Yields the metrics of ``client`` as Prometheus metric families on
    each collect (register it with a ``prometheus_client`` registry).
    ``labels`` (for example ``{"client": "orders"}``) are added to every
    sample, so that several clients can be registered side by side."""

    def __init__(self, client: "Client", labels: Optional[Dict[str, str]] = None) -> None:
        self._client = client
        self._labels = dict(labels or {})

    def collect(self) -> Iterator["Metric"]:
        """The metric families of one snapshot (see the module's docs)."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

        m = self._client.metrics()
        names = list(self._labels)
        values = list(self._labels.values())

        acquires = CounterMetricFamily(
            "zklock_acquires", "Acquires by outcome (each member of a multi-lock).", labels=names + ["outcome"]
        )
        for outcome, n in [
            ("granted", m.acquires_granted),
            ("timed_out", m.acquires_timed_out),
            ("cancelled", m.acquires_cancelled),
            ("failed", m.acquires_failed),
        ]:
            acquires.add_metric(values + [outcome], n)
        yield acquires

        def histogram(name: str, doc: str, h: "Histogram") -> HistogramMetricFamily:
            family = HistogramMetricFamily(name, doc, labels=names)
            buckets = [(_bound(le), n) for le, n in h.buckets] + [("+Inf", h.count)]
            family.add_metric(values, buckets, h.sum_seconds)
            return family

        yield histogram("zklock_acquire_wait_seconds", "How long granted acquires waited.", m.wait_time)
        yield histogram("zklock_hold_seconds", "How long locks were held (grant to release or loss).", m.hold_time)

        for name, doc, n in [
            ("zklock_suspensions", "Times a held lock became suspended.", m.suspensions),
            ("zklock_losses", "Held locks lost.", m.losses),
            ("zklock_reconnects", "Times a lost connection came back with the same session.", m.reconnects),
            ("zklock_session_expiries", "Sessions that ended without a close.", m.session_expiries),
        ]:
            family = CounterMetricFamily(name, doc, labels=names)
            family.add_metric(values, n)
            yield family

        requests = CounterMetricFamily(
            "zklock_requests", "Requests written to ZooKeeper, by operation.", labels=names + ["op"]
        )
        for op, n in sorted(m.requests.items()):
            requests.add_metric(values + [op], n)
        yield requests

        pending = GaugeMetricFamily("zklock_cleanups_pending", "Background node deletions not finished.", labels=names)
        pending.add_metric(values, m.cleanups_pending)
        yield pending


def _bound(le: float) -> str:
    """A bucket's upper bound as Prometheus writes it (``0.005``, ``1.0``)."""
    return repr(float(le))
