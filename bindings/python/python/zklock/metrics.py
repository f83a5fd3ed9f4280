"""Clients' metrics in a Prometheus registry (``prometheus_client``).

::

    from prometheus_client import start_http_server
    import zklock.metrics

    zklock.metrics.register_client(zk, labels={"client": "orders"})
    zklock.metrics.register_client(other, labels={"client": "other"})
    start_http_server(9100)

Each scrape takes one :meth:`zklock.Client.metrics` snapshot of each
registered client and yields, once per registry, with every client's
samples:

- ``zklock_acquires_total{outcome="granted"|"timed_out"|"cancelled"|"failed"}``
- ``zklock_acquire_wait_seconds`` and ``zklock_hold_seconds`` (histograms)
- ``zklock_suspensions_total``, ``zklock_losses_total``,
  ``zklock_reconnects_total``, ``zklock_session_expiries_total``
- ``zklock_requests_total{op="create2"|"getData"|...}``
- ``zklock_cleanups_pending`` (a gauge)

These are the metric names, labels, help texts and values of Node's
``zklock/metrics`` (``registerClient``), and the rules are Node's too:

- A registry holds one family of each name, so one :class:`Collector`
  per registry holds every client registered with it:
  :func:`register_client` makes it with the registry's first client and
  adds later clients to it; :meth:`Registration.unregister` takes a client
  out (and, with the last one, the collector out of the registry).
- ``labels`` (for example ``{"client": "orders"}``) go on every sample of
  the client, to tell the clients of one registry apart: every client of
  one registry has the same label names and other values. Label names are
  Prometheus label names, not starting with ``__`` and other than
  ``outcome``, ``op`` and ``le`` (which the metrics use themselves); the
  values are ``str``.

``Collector(client, labels)``, registered by hand
(``registry.register(...)``), is the same collector holding one client,
for a registry of one client: it has a ``describe()``, so the registry
refuses a second one, or one next to :func:`register_client`'s
(``ValueError``: "Duplicated timeseries"), instead of writing every
family twice. For several clients, use :func:`register_client`.

``prometheus_client`` is not a dependency of zklock: it is imported when a
scrape collects (or by :func:`register_client` without a ``registry``, for
its default one), so importing this module does not need it.
"""

from __future__ import annotations

import re
import threading
import weakref
from typing import TYPE_CHECKING, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from . import Client, InvalidArgument

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric
    from prometheus_client.registry import Collector as _Base
    from prometheus_client.registry import CollectorRegistry

    from . import Histogram, Metrics
else:
    _Base = object

__all__ = ["Collector", "Registration", "register_client"]

#: The label names of the metrics themselves (the user's labels must differ).
_RESERVED_LABELS = ("outcome", "op", "le")

#: A Prometheus label name (those starting with ``__``, Prometheus' own, are refused apart).
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")

#: Guards every collector's clients and the registry -> collector map.
_lock = threading.Lock()

#: The collector of each registry that has clients from register_client.
_collectors: "weakref.WeakKeyDictionary[CollectorRegistry, Collector]" = weakref.WeakKeyDictionary()


class _Entry:
    """One registered client and its labels (checked)."""

    def __init__(self, client: Client, labels: Dict[str, str]) -> None:
        self.client = client
        self.labels = labels


def _check(client: object, labels: Optional[Mapping[str, str]]) -> _Entry:
    """``client`` and a checked copy of ``labels``, or the error Node's
    ``registerClient`` gives: TypeError for a client that is not a
    :class:`zklock.Client`, labels that are not a mapping or a value that
    is not a ``str``; :class:`zklock.InvalidArgument` for a name that cannot
    be a label name here."""
    if not isinstance(client, Client):
        raise TypeError("zklock.metrics: client must be a zklock.Client, not %s" % type(client).__name__)
    if labels is None:
        return _Entry(client, {})
    if not isinstance(labels, Mapping):
        raise TypeError(
            "zklock.metrics: labels must be a mapping of label names to str, not %s" % type(labels).__name__
        )
    copy: Dict[str, str] = {}
    for name, value in labels.items():
        if (
            not isinstance(name, str)
            or not _LABEL_NAME.fullmatch(name)
            or name.startswith("__")
            or name in _RESERVED_LABELS
        ):
            raise InvalidArgument(
                "zklock.metrics: %r cannot be a label name here (a Prometheus label name, not starting "
                "with __, not %s)" % (name, ", ".join(_RESERVED_LABELS)),
                "INVALID_ARGUMENT",
            )
        if not isinstance(value, str):
            raise TypeError("zklock.metrics: label %s must be a str, not %s" % (name, type(value).__name__))
        copy[name] = value
    return _Entry(client, copy)


class Collector(_Base):
    """A ``prometheus_client`` collector of the metrics of a set of
    clients: each collect yields every family once, with one snapshot's
    samples of each client (see the module's docs).

    ``Collector(client, labels)`` holds ``client``, for registering by hand
    with a registry of one client (the registry refuses a second
    collector of these names). :func:`register_client` makes and fills the
    collector of a registry itself. Raises TypeError or
    :class:`zklock.InvalidArgument` for ``client`` and ``labels`` as
    :func:`register_client` does."""

    def __init__(self, client: Client, labels: Optional[Mapping[str, str]] = None) -> None:
        self._entries: List[_Entry] = [_check(client, labels)]

    def _add(self, entry: _Entry) -> None:
        """Adds ``entry`` unless another client has other label names or
        the same labels (InvalidArgument). Called with ``_lock`` held."""
        for other in self._entries:
            if sorted(other.labels) != sorted(entry.labels):
                raise InvalidArgument(
                    "zklock.metrics: labels %r: every client of one registry needs the same label names "
                    "(another has %r)" % (entry.labels, other.labels),
                    "INVALID_ARGUMENT",
                )
            if other.labels == entry.labels:
                raise InvalidArgument(
                    "zklock.metrics: labels %r: another client has the same labels in this registry "
                    "(their series would be one)" % (entry.labels,),
                    "INVALID_ARGUMENT",
                )
        self._entries.append(entry)

    def describe(self) -> Iterable["Metric"]:
        """The families without samples: the names a registry reserves for
        this collector (so that it refuses a second one)."""
        return list(self._families([], []))

    def collect(self) -> Iterator["Metric"]:
        """The metric families of one snapshot of each client (see the module's docs)."""
        with _lock:
            entries = list(self._entries)
        names = list(entries[0].labels) if entries else []
        snapshots = [([e.labels[n] for n in names], e.client.metrics()) for e in entries]
        return self._families(names, snapshots)

    def _families(self, names: List[str], snapshots: Sequence[Tuple[List[str], "Metrics"]]) -> Iterator["Metric"]:
        """The families with the samples of ``snapshots``: each the label
        values (in the order of ``names``) and the metrics of one client."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

        acquires = CounterMetricFamily(
            "zklock_acquires", "Acquires by outcome (each member of a multi-lock).", labels=names + ["outcome"]
        )
        for values, m in snapshots:
            for outcome, n in [
                ("granted", m.acquires_granted),
                ("timed_out", m.acquires_timed_out),
                ("cancelled", m.acquires_cancelled),
                ("failed", m.acquires_failed),
            ]:
                acquires.add_metric(values + [outcome], n)
        yield acquires

        def histogram(name: str, doc: str, pick: Callable[["Metrics"], "Histogram"]) -> HistogramMetricFamily:
            family = HistogramMetricFamily(name, doc, labels=names)
            for values, m in snapshots:
                h = pick(m)
                buckets = [(_bound(le), n) for le, n in h.buckets] + [("+Inf", h.count)]
                family.add_metric(values, buckets, h.sum_seconds)
            return family

        yield histogram("zklock_acquire_wait_seconds", "How long granted acquires waited.", lambda m: m.wait_time)
        yield histogram(
            "zklock_hold_seconds", "How long locks were held (grant to release or loss).", lambda m: m.hold_time
        )

        for name, doc, field in [
            ("zklock_suspensions", "Times a held lock became suspended.", "suspensions"),
            ("zklock_losses", "Held locks lost.", "losses"),
            ("zklock_reconnects", "Times a lost connection came back with the same session.", "reconnects"),
            ("zklock_session_expiries", "Sessions that ended without a close.", "session_expiries"),
        ]:
            family = CounterMetricFamily(name, doc, labels=names)
            for values, m in snapshots:
                family.add_metric(values, getattr(m, field))
            yield family

        requests = CounterMetricFamily(
            "zklock_requests", "Requests written to ZooKeeper, by operation.", labels=names + ["op"]
        )
        for values, m in snapshots:
            for op, n in sorted(m.requests.items()):
                requests.add_metric(values + [op], n)
        yield requests

        pending = GaugeMetricFamily("zklock_cleanups_pending", "Background node deletions not finished.", labels=names)
        for values, m in snapshots:
            pending.add_metric(values, m.cleanups_pending)
        yield pending


class Registration:
    """A client's place in a registry (what :func:`register_client` returns)."""

    def __init__(self, registry: "CollectorRegistry", collector: Collector, entry: _Entry) -> None:
        self._registry = registry
        self._collector = collector
        self._entry = entry

    def unregister(self) -> None:
        """Stops reading the client at scrapes; with the last client of the
        registry, the collector leaves the registry. Idempotent."""
        with _lock:
            entries = self._collector._entries
            if self._entry not in entries:
                return
            entries.remove(self._entry)
            if entries:
                return
            if _collectors.get(self._registry) is self._collector:
                del _collectors[self._registry]
            # Under the lock: a client registered meanwhile makes a new
            # collector, which the registry takes once this one has left.
            try:
                self._registry.unregister(self._collector)
            except KeyError:
                pass  # taken out of the registry by hand already


def register_client(
    client: Client, registry: Optional["CollectorRegistry"] = None, labels: Optional[Mapping[str, str]] = None
) -> Registration:
    """Adds ``client``'s metrics to a ``prometheus_client`` registry
    (default: ``prometheus_client.REGISTRY``). The registry's first client
    registers a :class:`Collector` with it; later ones join that collector,
    told apart by their ``labels``. Each scrape takes one snapshot of each
    client, shared by all its metrics. A closed client still shows its
    counts until it is unregistered. A scrape does not wait for ZooKeeper: a
    snapshot is a copy of counters kept in the client.

    Raises TypeError when ``client`` is not a :class:`zklock.Client`,
    ``labels`` is not a mapping or a label value is not a ``str``;
    :class:`zklock.InvalidArgument` for a label name that cannot be used,
    labels whose names differ from (or that equal) those of a client
    already in the registry, or a collector of our metric names in the
    registry that is not ours (nothing is added then); ImportError when
    no ``registry`` is given and ``prometheus_client`` is not installed."""
    entry = _check(client, labels)
    if registry is None:
        try:
            from prometheus_client import REGISTRY
        except ImportError as err:
            raise ImportError(
                "zklock.metrics: no registry was given and prometheus_client is not installed "
                "(pip install prometheus-client; zklock does not depend on it)"
            ) from err
        registry = REGISTRY
    with _lock:
        collector = _collectors.get(registry)
        if collector is not None:
            collector._add(entry)
            return Registration(registry, collector, entry)
        collector = Collector(entry.client, entry.labels)
        entry = collector._entries[0]
        try:
            registry.register(collector)
        except ValueError as err:
            raise InvalidArgument(
                "zklock.metrics: the registry already has a metric of one of our names (%s)" % err,
                "INVALID_ARGUMENT",
            ) from err
        _collectors[registry] = collector
        return Registration(registry, collector, entry)


def _bound(le: float) -> str:
    """A bucket's upper bound as Prometheus writes it (``0.005``, ``1.0``)."""
    return repr(float(le))
