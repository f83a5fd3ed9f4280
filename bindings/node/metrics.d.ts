/**
 * `zklock/metrics`: a client's metrics (`client.metrics()`) exported to
 * Prometheus through a [prom-client](https://github.com/siimon/prom-client)
 * registry, the counterpart of Python's `zklock.metrics.register_client`:
 * the same metric names, labels, help texts and values.
 *
 * ```js
 * const { Registry } = require('prom-client')
 * const { registerClient } = require('zklock/metrics')
 *
 * const registry = new Registry()
 * registerClient(client, { registry, labels: { client: 'orders' } })
 * const text = await registry.metrics() // serve it on /metrics
 * ```
 *
 * Each scrape reads one snapshot of each registered client and shows:
 *
 * - `zklock_acquires_total{outcome="granted"|"timed_out"|"cancelled"|"failed"}`
 * - `zklock_acquire_wait_seconds` and `zklock_hold_seconds` (histograms:
 *   `_bucket{le}` cumulative, `_count`, `_sum`; `le` written as Python
 *   writes it, `1.0` not `1`)
 * - `zklock_suspensions_total`, `zklock_losses_total`,
 *   `zklock_reconnects_total`, `zklock_session_expiries_total`
 * - `zklock_requests_total{op="create2"|"getData"|...}`
 * - `zklock_cleanups_pending` (a gauge)
 *
 * prom-client is an optional peer dependency of zklock, not a dependency:
 * `require('zklock/metrics')` does not load it, and neither does
 * `registerClient` given a `registry`. Without one, `registerClient` uses
 * prom-client's default registry and throws an `Error` saying prom-client
 * is not installed if it cannot be found.
 *
 * @module
 */

import type { Registry, RegistryContentType } from 'prom-client'
import type { Client } from './index'

/** The options of {@link registerClient}. */
export interface RegisterClientOptions {
  /**
   * The prom-client registry to add the metrics to (Prometheus or
   * OpenMetrics content type). Default: prom-client's default registry
   * (`require('prom-client').register`).
   */
  registry?: Registry<RegistryContentType>
  /**
   * Labels added to every sample, such as `{ client: 'orders' }`, so that
   * several clients can be registered with one registry side by side.
   * Every client of one registry needs the same label names and other
   * values. Names are Prometheus label names, not starting with `__` and
   * other than `outcome`, `op` and `le` (which the metrics use). Default:
   * none.
   */
  labels?: Readonly<Record<string, string>>
}

/** A client's place in a registry (what {@link registerClient} returns). */
export interface Registration {
  /**
   * Stops reading the client at scrapes; with the last client of the
   * registry, the metrics leave the registry. Idempotent.
   */
  unregister(): void
}

/**
 * Adds `client`'s metrics to a prom-client registry. The first client of a
 * registry adds the metrics named in {@link METRIC_NAMES} to it; later ones
 * join them, told apart by their labels. Each scrape
 * (`registry.metrics()`, `registry.getMetricsAsJSON()`) takes one snapshot
 * (`client.metrics()`) of each client, shared by all its metrics, so the
 * values of one scrape belong together. `registry.resetMetrics()` leaves
 * them as they are: they are the client's own counts. A closed client
 * still shows its counts until it is unregistered. A scrape does not wait
 * for ZooKeeper: a snapshot is a copy of counters kept in the client.
 *
 * @throws {TypeError} `client` is not a zklock `Client`, or a label value is
 *   not a string.
 * @throws {ZkLockError} `INVALID_ARGUMENT`: an unknown option, a label name
 *   that cannot be used, labels whose names differ from (or that equal) those
 *   of a client already in the registry, or a metric of one of our names in
 *   the registry that is not ours (nothing is added then).
 * @throws {Error} no `registry` was given and prom-client cannot be found.
 */
export declare function registerClient(client: Client, options?: RegisterClientOptions): Registration

/** The names of the metrics {@link registerClient} adds, in the order a scrape shows them. */
export declare const METRIC_NAMES: ReadonlyArray<string>
