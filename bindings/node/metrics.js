'use strict'
// `zklock/metrics`: a client's metrics (`client.metrics()`) in a prom-client
// registry, the Node counterpart of Python's
// `zklock.metrics.register_client`: the same metric names, labels, help
// texts and values.
//
//   const { Registry } = require('prom-client')
//   const { registerClient } = require('zklock/metrics')
//   const registry = new Registry()
//   registerClient(client, { registry, labels: { client: 'orders' } })
//   // ... await registry.metrics()
//
// prom-client's own metric classes keep their values themselves; here the
// values are the client's, read at the scrape, and a histogram's buckets
// come ready-made (prom-client's Histogram can only observe). So each
// family is a small object of our own with what a prom-client Registry reads
// from a metric: `name`, `help`, `type`, `aggregator`, `get()` and
// `reset()`. One set of families serves every client registered with one
// registry (a registry holds one metric per name), with the clients told
// apart by their labels.
//
// prom-client is not a dependency of zklock (an optional peer dependency):
// this module does not load it, except to find prom-client's default
// registry when no `registry` is given.

const { Client, ZkLockError } = require('./index.js')

/** The label names our own families use (the user's labels must differ). */
const RESERVED_LABELS = Object.freeze(['outcome', 'op', 'le'])

/** A Prometheus label name (and not one of Prometheus' own, `__...`). */
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/

/**
 * The families, in the order a scrape shows them (Python's order). Each
 * `values(m, labels)` gives the samples of one client's snapshot `m` in
 * prom-client's form: `{ labels, value }`, with `metricName` for a
 * histogram's `_bucket`, `_count` and `_sum` samples.
 */
const FAMILIES = Object.freeze([
  {
    name: 'zklock_acquires_total',
    help: 'Acquires by outcome (each member of a multi-lock).',
    type: 'counter',
    values: (m, labels) => [
      { labels: { ...labels, outcome: 'granted' }, value: m.acquiresGranted },
      { labels: { ...labels, outcome: 'timed_out' }, value: m.acquiresTimedOut },
      { labels: { ...labels, outcome: 'cancelled' }, value: m.acquiresCancelled },
      { labels: { ...labels, outcome: 'failed' }, value: m.acquiresFailed },
    ],
  },
  {
    name: 'zklock_acquire_wait_seconds',
    help: 'How long granted acquires waited.',
    type: 'histogram',
    values: (m, labels) => histogram('zklock_acquire_wait_seconds', m.waitTime, labels),
  },
  {
    name: 'zklock_hold_seconds',
    help: 'How long locks were held (grant to release or loss).',
    type: 'histogram',
    values: (m, labels) => histogram('zklock_hold_seconds', m.holdTime, labels),
  },
  counter('zklock_suspensions_total', 'Times a held lock became suspended.', (m) => m.suspensions),
  counter('zklock_losses_total', 'Held locks lost.', (m) => m.losses),
  counter('zklock_reconnects_total', 'Times a lost connection came back with the same session.', (m) => m.reconnects),
  counter('zklock_session_expiries_total', 'Sessions that ended without a close.', (m) => m.sessionExpiries),
  {
    name: 'zklock_requests_total',
    help: 'Requests written to ZooKeeper, by operation.',
    type: 'counter',
    values: (m, labels) =>
      Object.keys(m.requests)
        .sort()
        .map((op) => ({ labels: { ...labels, op }, value: m.requests[op] })),
  },
  {
    name: 'zklock_cleanups_pending',
    help: 'Background node deletions not finished.',
    type: 'gauge',
    values: (m, labels) => [{ labels: { ...labels }, value: m.cleanupsPending }],
  },
])

/** The metric names of every family, in the order a scrape shows them. */
const METRIC_NAMES = Object.freeze(FAMILIES.map((f) => f.name))

/** A family of one counter per client, `value(m)` of its snapshot. */
function counter(name, help, value) {
  return { name, help, type: 'counter', values: (m, labels) => [{ labels: { ...labels }, value: value(m) }] }
}

/**
 * The samples of one histogram of a snapshot: its buckets (already
 * cumulative in the snapshot), the `+Inf` bucket (the count), the count
 * and the sum.
 */
function histogram(name, h, labels) {
  const values = h.buckets.map((b) => ({
    metricName: `${name}_bucket`,
    labels: { ...labels, le: bound(b.le) },
    value: b.count,
  }))
  values.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: h.count })
  values.push({ metricName: `${name}_count`, labels: { ...labels }, value: h.count })
  values.push({ metricName: `${name}_sum`, labels: { ...labels }, value: h.sumSeconds })
  return values
}

/**
 * A bucket's upper bound as Python's exporter writes it (`0.005`, `1.0`,
 * `300.0`), so that the `le` label values are the same in both languages
 * (prom-client would write `1`). Our bounds are 0.001 to 300 seconds,
 * where JavaScript's and Python's shortest forms of a float agree but for
 * the `.0` of a whole number.
 */
function bound(le) {
  return Number.isInteger(le) ? `${le}.0` : String(le)
}

/**
 * What a prom-client Registry reads of a metric, for one family of every
 * client registered with one registry. `name` is a plain property: an
 * OpenMetrics registry renames a counter (drops `_total`) at each scrape,
 * as it does to its own counters.
 */
class Family {
  constructor(exporter, def) {
    this.exporter = exporter
    this.def = def
    this.name = def.name
    this.help = def.help
    this.type = def.type
    // How prom-client's cluster support merges the workers' values.
    this.aggregator = 'sum'
  }

  /** The family's samples: every registered client's, from this scrape's snapshots. */
  async get() {
    const values = []
    for (const { labels, metrics } of this.exporter.snapshots()) values.push(...this.def.values(metrics, labels))
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator }
  }

  /** Does nothing (`registry.resetMetrics()`): the values are the client's own counts. */
  reset() {}
}

/** The families of one registry and the clients registered with it. */
class Exporter {
  constructor(registry) {
    this.registry = registry
    this.entries = []
    this.families = FAMILIES.map((def) => new Family(this, def))
    this.taken = null
  }

  /**
   * One snapshot of each client (and its labels) per scrape: a registry
   * asks every metric for its values (`get()`) in one synchronous loop
   * (`metrics()`, `getMetricsAsJSON()`), so the first family asked takes
   * the snapshots and they are dropped once that loop is over (a
   * microtask), for the next scrape to take its own.
   */
  snapshots() {
    if (this.taken === null) {
      this.taken = this.entries.map((e) => ({ labels: e.labels, metrics: e.client.metrics() }))
      queueMicrotask(() => {
        this.taken = null
      })
    }
    return this.taken
  }

  /** Adds `entry`, registering the families that the registry does not hold. */
  add(entry) {
    const registry = this.registry
    const held = this.families.filter((f) => registry.getSingleMetric(f.def.name) === f)
    // A registry cleared (`registry.clear()`) since forgot our clients too.
    if (held.length === 0) this.entries = []
    for (const f of this.families) {
      const other = registry.getSingleMetric(f.def.name)
      if (other !== undefined && other !== f) {
        throw new ZkLockError(`the registry already has a metric named ${f.def.name}`, 'INVALID_ARGUMENT')
      }
    }
    const names = Object.keys(entry.labels).sort().join(',')
    for (const e of this.entries) {
      if (Object.keys(e.labels).sort().join(',') !== names) {
        throw new ZkLockError(
          `labels ${JSON.stringify(entry.labels)}: every client of one registry needs the same label names ` +
            `(another has ${JSON.stringify(e.labels)})`,
          'INVALID_ARGUMENT',
        )
      }
      if (Object.keys(e.labels).every((k) => e.labels[k] === entry.labels[k])) {
        throw new ZkLockError(
          `labels ${JSON.stringify(entry.labels)}: another client has the same labels in this registry ` +
            '(their series would be one)',
          'INVALID_ARGUMENT',
        )
      }
    }
    for (const f of this.families) if (registry.getSingleMetric(f.def.name) !== f) registry.registerMetric(f)
    this.entries.push(entry)
  }

  /** Removes `entry`; with the last one, the families leave the registry. */
  remove(entry) {
    const i = this.entries.indexOf(entry)
    if (i < 0) return
    this.entries.splice(i, 1)
    if (this.entries.length > 0) return
    for (const f of this.families) {
      if (this.registry.getSingleMetric(f.def.name) === f) this.registry.removeSingleMetric(f.def.name)
    }
    exporters.delete(this.registry)
  }
}

/** The exporter of each registry that has clients. */
const exporters = new WeakMap()

/** prom-client's default registry, or a clear error when prom-client is not installed. */
function defaultRegistry() {
  let prom
  try {
    prom = require('prom-client')
  } catch (err) {
    if (err && err.code === 'MODULE_NOT_FOUND') {
      throw new Error(
        'zklock/metrics: no `registry` was given and prom-client is not installed ' +
          '(npm install prom-client; zklock does not depend on it)',
        { cause: err },
      )
    }
    throw err
  }
  return prom.register
}

/** The user's labels, checked and copied. */
function checkLabels(labels) {
  if (labels === undefined) return {}
  if (labels === null || typeof labels !== 'object' || Array.isArray(labels)) {
    throw new TypeError('registerClient: `labels` must be an object of label names to strings')
  }
  const copy = {}
  for (const [name, value] of Object.entries(labels)) {
    if (!LABEL_NAME.test(name) || name.startsWith('__') || RESERVED_LABELS.includes(name)) {
      throw new ZkLockError(
        `registerClient: ${JSON.stringify(name)} cannot be a label name here ` +
          `(a Prometheus label name, not starting with __, not ${RESERVED_LABELS.join(', ')})`,
        'INVALID_ARGUMENT',
      )
    }
    if (typeof value !== 'string') {
      throw new TypeError(`registerClient: label ${name} must be a string, not ${typeof value}`)
    }
    copy[name] = value
  }
  return copy
}

/**
 * Registers `client`'s metrics with a prom-client registry (see
 * metrics.d.ts): each scrape reads one snapshot of the client.
 */
function registerClient(client, options = {}) {
  if (!(client instanceof Client)) throw new TypeError('registerClient: `client` must be a zklock Client')
  if (options === null || typeof options !== 'object')
    throw new TypeError('registerClient: `options` must be an object')
  for (const key of Object.keys(options)) {
    if (key !== 'registry' && key !== 'labels') {
      throw new ZkLockError(
        `unknown option ${JSON.stringify(key)} in registerClient options; valid options: registry, labels`,
        'INVALID_ARGUMENT',
      )
    }
  }
  const labels = checkLabels(options.labels)
  const registry = options.registry === undefined ? defaultRegistry() : options.registry
  let exporter = exporters.get(registry)
  if (exporter === undefined) {
    exporter = new Exporter(registry)
    exporters.set(registry, exporter)
  }
  const entry = { client, labels }
  try {
    exporter.add(entry)
  } catch (err) {
    if (exporter.entries.length === 0) exporters.delete(registry)
    throw err
  }
  return Object.freeze({ unregister: () => exporter.remove(entry) })
}

module.exports = { registerClient, METRIC_NAMES }
