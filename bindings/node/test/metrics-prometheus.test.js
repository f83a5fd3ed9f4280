'use strict'
// zklock/metrics: a client's metrics in a prom-client registry, read back
// from the registry's own text exposition (`await registry.metrics()`).
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { spawnSync } = require('node:child_process')
const { Registry } = require('prom-client')
const { ZkLockError } = require('..')
const { registerClient, METRIC_NAMES } = require('../metrics.js')
const { useZooKeeper, lockPath } = require('./helpers.js')

const zk = useZooKeeper([])

/**
 * The text exposition as families: name -> { help, type, samples: [{ name,
 * labels, value }] }; a sample belongs to the family of the last `# TYPE`.
 */
function parse(text) {
  const families = new Map()
  let family = null
  for (const line of text.split('\n')) {
    if (line === '' || line === '# EOF') continue
    let m = /^# HELP (\S+) (.*)$/.exec(line)
    if (m) {
      family = { help: m[2], type: null, samples: [] }
      families.set(m[1], family)
      continue
    }
    m = /^# TYPE (\S+) (\S+)$/.exec(line)
    if (m) {
      assert.ok(families.has(m[1]), `TYPE before HELP: ${line}`)
      families.get(m[1]).type = m[2]
      continue
    }
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    assert.ok(m && family, `not a sample line: ${line}`)
    const labels = {}
    for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k] = v
    const value = m[3] === '+Inf' ? Number.POSITIVE_INFINITY : Number(m[3])
    family.samples.push({ name: m[1], labels, value })
  }
  return families
}

/** The value of the one sample named `name` with exactly `labels`. */
function sample(families, family, name, labels) {
  const f = families.get(family)
  assert.ok(f, `no family ${family}`)
  const found = f.samples.filter(
    (s) =>
      s.name === name &&
      Object.keys(s.labels).length === Object.keys(labels).length &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )
  assert.equal(found.length, 1, `${name} ${JSON.stringify(labels)}: ${JSON.stringify(f.samples)}`)
  return found[0].value
}

/** Records every snapshot `client.metrics()` gives (and so how many a scrape took). */
function recordSnapshots(client) {
  const taken = []
  const metrics = client.metrics.bind(client)
  client.metrics = () => {
    const m = metrics()
    taken.push(m)
    return m
  }
  return taken
}

/**
 * The (name, help) pairs of Python's zklock.metrics.Collector, read from its
 * source: the two exporters must not drift apart. Python names counters
 * without `_total` (prometheus_client adds it).
 */
function pythonFamilies() {
  const source = fs.readFileSync(path.join(__dirname, '../../python/python/zklock/metrics.py'), 'utf8')
  const body = source.slice(source.indexOf('def collect'))
  return [...body.matchAll(/"(zklock_[a-z_]+)",\s*"([^"]+)"/g)].map(([, name, help]) => [name, help])
}

const TYPES = {
  zklock_acquires_total: 'counter',
  zklock_acquire_wait_seconds: 'histogram',
  zklock_hold_seconds: 'histogram',
  zklock_suspensions_total: 'counter',
  zklock_losses_total: 'counter',
  zklock_reconnects_total: 'counter',
  zklock_session_expiries_total: 'counter',
  zklock_requests_total: 'counter',
  zklock_cleanups_pending: 'gauge',
}

/** Checks one client's samples (labels `labels`) against its snapshot `m`. */
function checkClient(families, labels, m) {
  const counters = [
    ['zklock_acquires_total', { outcome: 'granted' }, m.acquiresGranted],
    ['zklock_acquires_total', { outcome: 'timed_out' }, m.acquiresTimedOut],
    ['zklock_acquires_total', { outcome: 'cancelled' }, m.acquiresCancelled],
    ['zklock_acquires_total', { outcome: 'failed' }, m.acquiresFailed],
    ['zklock_suspensions_total', {}, m.suspensions],
    ['zklock_losses_total', {}, m.losses],
    ['zklock_reconnects_total', {}, m.reconnects],
    ['zklock_session_expiries_total', {}, m.sessionExpiries],
    ['zklock_cleanups_pending', {}, m.cleanupsPending],
  ]
  for (const [name, extra, value] of counters) {
    assert.equal(sample(families, name, name, { ...labels, ...extra }), value, `${name} ${JSON.stringify(extra)}`)
  }
  const ops = families
    .get('zklock_requests_total')
    .samples.filter((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .map((s) => s.labels.op)
  assert.deepEqual(ops, Object.keys(m.requests).sort(), 'one sample per operation, sorted')
  for (const op of ops) {
    assert.equal(sample(families, 'zklock_requests_total', 'zklock_requests_total', { ...labels, op }), m.requests[op])
  }
  for (const [name, h] of [
    ['zklock_acquire_wait_seconds', m.waitTime],
    ['zklock_hold_seconds', m.holdTime],
  ]) {
    const buckets = families
      .get(name)
      .samples.filter((s) => s.name === `${name}_bucket` && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    const les = buckets.map((s) => s.labels.le)
    // The bounds as Python writes them (repr of a float): 1.0, not 1.
    assert.deepEqual(les, [...h.buckets.map((b) => (Number.isInteger(b.le) ? `${b.le}.0` : String(b.le))), '+Inf'])
    const counts = buckets.map((s) => s.value)
    assert.deepEqual(counts, [...h.buckets.map((b) => b.count), h.count], `${name} buckets`)
    for (let i = 1; i < counts.length; i++) assert.ok(counts[i - 1] <= counts[i], `${name} cumulative: ${counts}`)
    assert.equal(sample(families, name, `${name}_count`, labels), h.count)
    assert.equal(sample(families, name, `${name}_sum`, labels), h.sumSeconds)
  }
}

test('a scrape shows each client its snapshot, with its labels, as Python names them', async () => {
  const a = await zk.client()
  const b = await zk.client()
  const registry = new Registry()
  const ra = registerClient(a, { registry, labels: { client: 'a' } })
  const rb = registerClient(b, { registry, labels: { client: 'b' } })
  const fromA = recordSnapshots(a)
  const fromB = recordSnapshots(b)

  const p = lockPath('prom')
  const held = await a.lock(p).acquire({ timeoutMs: 5000 })
  await assert.rejects(b.lock(p).acquire({ timeoutMs: 200 }), (e) => e.code === 'TIMEOUT')
  assert.equal(await held.release(), 'RELEASED')
  const again = await a.lock(p).acquire({ timeoutMs: 5000 })
  assert.equal(await again.release(), 'RELEASED')

  const families = parse(await registry.metrics())
  assert.deepEqual([fromA.length, fromB.length], [1, 1], 'one snapshot of each client per scrape')
  const [ma] = fromA
  const [mb] = fromB

  assert.deepEqual([...families.keys()], METRIC_NAMES)
  assert.deepEqual(Object.keys(TYPES), METRIC_NAMES)
  const python = pythonFamilies()
  assert.equal(python.length, METRIC_NAMES.length, JSON.stringify(python))
  for (const [name, help] of python) {
    const ours = families.get(name) ?? families.get(`${name}_total`)
    assert.ok(ours, `Python's ${name} is missing`)
    assert.equal(ours.help, help, name)
  }
  for (const [name, f] of families) {
    assert.equal(f.type, TYPES[name], name)
    for (const s of f.samples) assert.ok(['a', 'b'].includes(s.labels.client), `${s.name} without a client label`)
  }

  // What happened, as each client counted it.
  assert.deepEqual([ma.acquiresGranted, ma.acquiresTimedOut, ma.holdTime.count], [2, 0, 2])
  assert.deepEqual([mb.acquiresGranted, mb.acquiresTimedOut, mb.holdTime.count], [0, 1, 0])
  assert.ok(ma.holdTime.sumSeconds >= 0.2, `${ma.holdTime.sumSeconds}`)
  checkClient(families, { client: 'a' }, ma)
  checkClient(families, { client: 'b' }, mb)
  assert.equal(sample(families, 'zklock_hold_seconds', 'zklock_hold_seconds_bucket', { client: 'a', le: '+Inf' }), 2)
  assert.ok(
    sample(families, 'zklock_hold_seconds', 'zklock_hold_seconds_bucket', { client: 'a', le: '0.05' }) <= 1,
    'one hold lasted 0.2 s or more',
  )

  // getMetricsAsJSON reads the families in one go too: one more snapshot each.
  await registry.getMetricsAsJSON()
  assert.deepEqual([fromA.length, fromB.length], [2, 2])

  ra.unregister()
  ra.unregister()
  const onlyB = parse(await registry.metrics())
  assert.deepEqual([...onlyB.keys()], METRIC_NAMES)
  for (const f of onlyB.values()) for (const s of f.samples) assert.equal(s.labels.client, 'b', s.name)
  assert.equal(fromA.length, 2, 'an unregistered client is not read')
  rb.unregister()
  assert.equal(await registry.metrics(), '\n', 'no families left')
  assert.deepEqual([fromA.length, fromB.length], [2, 3])
})

test('an OpenMetrics registry writes the counters its way', async () => {
  const c = await zk.client()
  const registry = new Registry(Registry.OPENMETRICS_CONTENT_TYPE)
  const r = registerClient(c, { registry })
  for (let i = 0; i < 2; i++) {
    const text = await registry.metrics()
    assert.match(text, /^# TYPE zklock_acquires counter$/m)
    assert.match(text, /^zklock_acquires_total\{outcome="granted"\} 0$/m)
    assert.match(text, /^zklock_hold_seconds_bucket\{le="\+Inf"\} 0$/m)
    assert.ok(text.endsWith('# EOF\n'))
  }
  r.unregister()
  assert.equal(registry.getSingleMetric('zklock_acquires_total'), undefined)
})

test('labels are checked; the registry keeps its names', async () => {
  const c = await zk.client()
  const d = await zk.client()
  const registry = new Registry()
  const invalid = (e) => e instanceof ZkLockError && e.code === 'INVALID_ARGUMENT'
  for (const labels of [{ le: 'x' }, { outcome: 'x' }, { op: 'x' }, { __x: 'x' }, { 'a-b': 'x' }]) {
    assert.throws(() => registerClient(c, { registry, labels }), invalid, JSON.stringify(labels))
  }
  assert.throws(() => registerClient(c, { registry, labels: { client: 1 } }), TypeError)
  assert.throws(() => registerClient(c, { registry, lables: {} }), invalid)
  assert.throws(() => registerClient({ metrics: () => ({}) }, { registry }), TypeError)
  assert.equal(await registry.metrics(), '\n', 'nothing registered by a refusal')

  const r = registerClient(c, { registry, labels: { client: 'c' } })
  assert.throws(() => registerClient(d, { registry, labels: { client: 'c' } }), invalid, 'same labels')
  assert.throws(() => registerClient(d, { registry, labels: { name: 'd' } }), invalid, 'other label names')
  assert.throws(() => registerClient(d, { registry }), invalid, 'no labels beside labels')
  r.unregister()

  // A metric of the same name that is not ours.
  const taken = new Registry()
  const { Gauge } = require('prom-client')
  new Gauge({ name: 'zklock_losses_total', help: 'not ours', registers: [taken] })
  assert.throws(() => registerClient(c, { registry: taken }), /zklock_losses_total/)
  assert.deepEqual(
    taken.getMetricsAsArray().map((m) => m.name),
    ['zklock_losses_total'],
    'all or nothing',
  )

  // A cleared registry forgets its clients; registering again starts afresh.
  const cleared = new Registry()
  registerClient(c, { registry: cleared, labels: { client: 'c' } })
  cleared.clear()
  registerClient(d, { registry: cleared, labels: { client: 'd' } })
  const families = parse(await cleared.metrics())
  for (const f of families.values()) for (const s of f.samples) assert.equal(s.labels.client, 'd')
})

test("without a registry: prom-client's default one, or a clear error without prom-client", async () => {
  const c = await zk.client()
  const prom = require('prom-client')
  const r = registerClient(c, { labels: { client: 'default' } })
  assert.match(await prom.register.metrics(), /^zklock_losses_total\{client="default"\} 0$/m)
  r.unregister()
  assert.doesNotMatch(await prom.register.metrics(), /zklock_/)

  // A process where prom-client cannot be found: require() works, and so
  // does registerClient with a registry of its own making; without one it
  // says what is missing.
  const script = `
    const Module = require('node:module')
    const resolve = Module._resolveFilename
    Module._resolveFilename = function (request, ...rest) {
      if (request === 'prom-client') {
        const e = new Error("Cannot find module 'prom-client'")
        e.code = 'MODULE_NOT_FOUND'
        throw e
      }
      return resolve.call(this, request, ...rest)
    }
    const { Client } = require('..')
    const { registerClient } = require('../metrics.js')
    ;(async () => {
      const c = await Client.connect({ hosts: process.env.CONNECT })
      const registered = []
      const registry = { getSingleMetric: () => undefined, registerMetric: (m) => registered.push(m.name) }
      registerClient(c, { registry })
      console.log('registered ' + registered.length)
      try {
        registerClient(c)
      } catch (e) {
        console.log('threw ' + e.message)
      }
      await c.close()
    })()
  `
  const out = spawnSync(process.execPath, ['-e', script], {
    cwd: __dirname,
    env: { ...process.env, CONNECT: zk.connect },
    encoding: 'utf8',
    timeout: 30_000,
  })
  assert.equal(out.status, 0, out.stderr)
  assert.match(out.stdout, /^registered 9$/m)
  assert.match(out.stdout, /^threw zklock\/metrics: no `registry` was given and prom-client is not installed/m)
})
