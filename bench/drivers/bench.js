'use strict'
// Benchmark driver for zklock's Node package (the release addon copied with
// index.js and native.js into $ZKLOCK_NODE_PACKAGE by `make bench`).
//   node bench.js SCENARIO HOSTS PATH [key=value ...]
// Scenarios: uncontended, contended, queue, independent, rw, waiters (see
// bench/README.md). Prints one JSON line {"result": {...}}.
const { Client } = require(process.env.ZKLOCK_NODE_PACKAGE || '../../bindings/node')

const [scenario, hosts, path, ...rest] = process.argv.slice(2)
const p = {}
for (const kv of rest) {
  const [k, v] = kv.split('=')
  p[k] = Number(v)
}
const num = (k, d) => (Number.isFinite(p[k]) ? p[k] : d)
const now = () => Number(process.hrtime.bigint()) / 1e3 // µs
const connect = () => Client.connect({ hosts, sessionTimeoutMs: 10000 })
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
// CPU time (user + system) of this process so far, in seconds.
const cpuS = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1e6
}
// A line for the runner (it reads the server's CPU time at these events).
const say = (o) => require('node:fs').writeSync(1, JSON.stringify(o) + '\n')

async function uncontended() {
  const c = await connect()
  const lock = c.lock(path)
  const warmup = num('warmup', 100)
  const holdMs = num('hold_us', 0) / 1000
  const lat = []
  let cpu0 = 0
  for (let i = 0; i < warmup + num('iters', 1000); i++) {
    if (i === warmup) {
      say({ event: 'measuring' })
      cpu0 = cpuS()
    }
    const t = now()
    const g = await lock.acquire({ timeoutMs: 30000 })
    if (holdMs > 0) await sleep(holdMs)
    await g.release()
    if (i >= warmup) lat.push(Math.round((now() - t) * 10) / 10)
  }
  const cpu = cpuS() - cpu0
  say({ event: 'measured' })
  await c.close()
  return { cpu_s: cpu, lat_us: lat }
}

function window() {
  const start = now()
  return { from: start + num('warmup_ms', 500) * 1e3, end: start + num('duration_ms', 3000) * 1e3 }
}

// contended / queue / independent: every waiter is an async loop; the
// event loop is single-threaded, so a plain counter checks exclusion.
async function throughput(independent) {
  const sessions = Math.max(1, num('sessions', 2))
  const waiters = Math.max(1, num('waiters', sessions))
  const clients = await Promise.all(Array.from({ length: sessions }, connect))
  const inside = new Array(independent ? waiters : 1).fill(0)
  let violations = 0
  const per = new Array(waiters).fill(0)
  const w = window()
  const cpuDuring = windowCpu(w)
  await Promise.all(
    Array.from({ length: waiters }, async (_, i) => {
      const slot = independent ? i : 0
      const lock = clients[i % sessions].lock(independent ? `${path}/${i}` : path)
      while (now() < w.end) {
        const g = await lock.acquire({ timeoutMs: 120000 })
        if (++inside[slot] !== 1) violations++
        const t = now()
        if (t >= w.from && t < w.end) per[i]++
        inside[slot]--
        await g.release()
      }
    }),
  )
  await Promise.all(clients.map((c) => c.close()))
  const cpu = await cpuDuring
  return {
    grants: per.reduce((a, b) => a + b, 0),
    per_worker: per,
    violations,
    window_s: (w.end - w.from) / 1e6,
    cpu_s: cpu,
  }
}

// The process's CPU seconds in the window `w`, said to the runner (timers
// on the event loop, which the waiters share).
async function windowCpu(w) {
  await sleep(Math.max(0, (w.from - now()) / 1e3))
  say({ event: 'measuring' })
  const cpu0 = cpuS()
  await sleep(Math.max(0, (w.end - now()) / 1e3))
  const cpu = cpuS() - cpu0
  say({ event: 'measured' })
  return cpu
}

async function rw() {
  const readers = num('readers', 8)
  const writers = num('writers', 2)
  const holdMs = num('hold_us', 1000) / 1000
  const n = readers + writers
  const clients = await Promise.all(Array.from({ length: n }, connect))
  const state = [0, 0]
  let violations = 0
  const per = new Array(n).fill(0)
  const w = window()
  await Promise.all(
    clients.map(async (c, i) => {
      const writer = i >= readers
      const lock = writer ? c.writeLock(path) : c.readLock(path)
      while (now() < w.end) {
        const g = await lock.acquire({ timeoutMs: 120000 })
        state[writer ? 1 : 0]++
        if (state[1] > 1 || (state[1] === 1 && state[0] > 0)) violations++
        const t = now()
        if (t >= w.from && t < w.end) per[i]++
        await sleep(holdMs)
        state[writer ? 1 : 0]--
        await g.release()
      }
    }),
  )
  await Promise.all(clients.map((c) => c.close()))
  const r = per.slice(0, readers).reduce((a, b) => a + b, 0)
  const wr = per.slice(readers).reduce((a, b) => a + b, 0)
  return { read_grants: r, write_grants: wr, grants: r + wr, violations, window_s: (w.end - w.from) / 1e6 }
}

// The process's thread count and resident memory (bytes), from /proc.
function processStatus() {
  const status = require('node:fs').readFileSync('/proc/self/status', 'utf8')
  const field = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)[1])
  return { threads: field('Threads'), rss: field('VmRSS') * 1024 }
}

// waiters: paths x per_path acquires waiting at once in this process, each
// its own lock handle (its own node), behind one holder per path. Reports
// the thread count and the memory per waiter while they all wait, then
// how fast they drain once the holders release (each waiter releases at
// once when granted).
async function waiters() {
  const paths = num('paths', 100)
  const perPath = num('per_path', 100)
  const sessions = Math.max(1, num('sessions', 16))
  const clients = await Promise.all(Array.from({ length: sessions }, connect))
  const lockPath = (i) => `${path}/${i}`
  const holders = await Promise.all(Array.from({ length: paths }, (_, i) => clients[0].lock(lockPath(i)).acquire()))
  global.gc?.()
  const before = processStatus()
  const t0 = now()
  let threadsMax = before.threads
  const done = []
  for (let i = 0; i < paths * perPath; i++) {
    const lock = clients[i % sessions].lock(lockPath(i % paths))
    done.push(lock.acquire({ timeoutMs: 600000 }).then((g) => g.release()))
  }
  const want = perPath + 1
  for (;;) {
    const counts = await Promise.all(Array.from({ length: paths }, (_, i) => clients[0].participants(lockPath(i))))
    threadsMax = Math.max(threadsMax, processStatus().threads)
    if (counts.every((c) => c.length === want)) break
    await sleep(200)
  }
  const queuedS = (now() - t0) / 1e6
  global.gc?.()
  const queued = processStatus()
  threadsMax = Math.max(threadsMax, queued.threads)
  const t1 = now()
  await Promise.all(holders.map((g) => g.release()))
  await Promise.all(done)
  const drainS = (now() - t1) / 1e6
  await Promise.all(clients.map((c) => c.close()))
  const n = paths * perPath
  return {
    waiters: n,
    threads_before: before.threads,
    threads_max: threadsMax,
    rss_per_waiter_bytes: Math.round((queued.rss - before.rss) / n),
    queued_s: queuedS,
    grants: n,
    window_s: drainS,
  }
}

// drain: waiters (async tasks over sessions) queue behind a holder and
// acquire once each; timed from the holder's release to the last release.
// Repeated `rounds` times, the first not counted.
async function drain() {
  const sessions = Math.max(1, num('sessions', 8))
  const waiters = num('waiters', 32)
  const rounds = Math.max(2, num('rounds', 3))
  const clients = await Promise.all(Array.from({ length: sessions }, connect))
  let inside = 0
  let violations = 0
  let windowUs = 0
  for (let round = 0; round < rounds; round++) {
    const holder = await clients[0].lock(path).acquire({ timeoutMs: 30000 })
    let last = 0
    const done = Promise.all(
      Array.from({ length: waiters }, async (_, i) => {
        const g = await clients[i % sessions].lock(path).acquire({ timeoutMs: 600000 })
        if (++inside !== 1) violations++
        inside--
        await g.release()
        last = now()
      }),
    )
    const until = now() + 120e6
    while ((await clients[0].participants(path)).length < waiters + 1) {
      if (now() > until) throw new Error('the waiters did not all queue')
      await sleep(5)
    }
    const start = now()
    await holder.release()
    await done
    if (round > 0) windowUs += last - start
  }
  await Promise.all(clients.map((c) => c.close()))
  return { grants: waiters * (rounds - 1), window_s: windowUs / 1e6, violations }
}

// One look at this process for `zklock-bench memory` (bench/src/memory.rs):
// VmRSS, VmHWM (bytes) and Threads from /proc/self/status; heap: null (no
// mallinfo from JavaScript); gc_heap: V8's heap in use plus the memory of
// JavaScript objects held outside it (heapUsed + external).
function memSnapshot(name) {
  const status = require('node:fs').readFileSync('/proc/self/status', 'utf8')
  const field = (key) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)[1])
  const m = process.memoryUsage()
  return {
    snap: name,
    rss: field('VmRSS') * 1024,
    hwm: field('VmHWM') * 1024,
    threads: field('Threads'),
    heap: null,
    gc_heap: m.heapUsed + m.external,
  }
}

// memory-one / memory-many / memory-hold: `zklock-bench memory`'s protocol
// (bench/src/memory.rs). One client; a holder (one) or N holders (many)
// taken first; on `start` N acquires, each its own lock handle, as
// Promises. In hold they keep their locks (`granted` once all hold);
// waiters granted (none should be) release at once. `snap gc` runs V8's
// collector first (node --expose-gc). Nothing is released on `quit`.
async function memory(shape) {
  const n = num('n', 1000)
  const c = await connect()
  const lockPath = (i) => (shape === 'one' ? path : `${path}/${i}`)
  const holders =
    shape === 'one' ? [c.lock(path)] : shape === 'many' ? Array.from({ length: n }, (_, i) => c.lock(lockPath(i))) : []
  const guards = await Promise.all(holders.map((l) => l.acquire({ timeoutMs: 600000 })))
  const locks = Array.from({ length: n }, (_, i) => c.lock(lockPath(i)))
  global.gc?.()
  await sleep(200)
  say({ event: 'ready' })
  let granted = 0
  const pending = []
  const lines = require('node:readline').createInterface({ input: process.stdin })
  for await (const line of lines) {
    const words = line.trim().split(/\s+/)
    if (words[0] === 'start') {
      require('node:fs').writeFileSync('/proc/self/clear_refs', '5')
      say(memSnapshot('before'))
      for (const lock of locks) {
        pending.push(
          lock
            .acquire({ timeoutMs: 900000 })
            .then((g) => {
              granted++
              if (shape === 'hold') {
                if (granted === n) say({ event: 'granted' })
                return g
              }
              return g.release()
            })
            .catch((e) => console.error(`acquire: ${e}`)),
        )
      }
      say({ event: 'started' })
    } else if (words[0] === 'snap' && words.length === 2) {
      if (words[1] === 'gc') global.gc?.()
      say(memSnapshot(words[1]))
    } else if (words[0] === 'quit') {
      break
    } else {
      throw new Error(`unknown command ${line}`)
    }
  }
  lines.close()
  await c.close()
  return { n, granted, holders: guards.length }
}

const scenarios = {
  'memory-one': () => memory('one'),
  'memory-many': () => memory('many'),
  'memory-hold': () => memory('hold'),
  uncontended,
  drain,
  contended: () => throughput(false),
  queue: () => throughput(false),
  independent: () => throughput(true),
  rw,
  waiters,
}

;(async () => {
  const run = scenarios[scenario]
  if (!run) throw new Error(`unknown scenario ${scenario}`)
  const result = await run()
  process.stdout.write(JSON.stringify({ result }) + '\n', () => process.exit(0))
})().catch((e) => {
  console.error(e)
  process.exit(1)
})
