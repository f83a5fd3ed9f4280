'use strict'
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { ZkLockError } = require('..')
const { useZooKeeper, lockPath, sleep, waitFor } = require('./helpers.js')

const zk = useZooKeeper()

test('an AbortSignal cancels a waiting acquire and leaves no node', async () => {
  const a = await zk.client()
  const b = await zk.client()
  const p = lockPath('abort')
  const holder = await a.lock(p).acquire()
  const ac = new AbortController()
  const waiting = b.lock(p).acquire({ signal: ac.signal, timeoutMs: 60000 })
  await sleep(300)
  assert.equal((await a.participants(p)).length, 2, 'the waiter queued')
  const t0 = Date.now()
  ac.abort(new Error('user gave up'))
  await assert.rejects(waiting, (e) => {
    assert.ok(e instanceof ZkLockError)
    assert.equal(e.code, 'CANCELLED')
    assert.equal(e.cause.message, 'user gave up')
    return true
  })
  assert.ok(Date.now() - t0 < 2000, 'the abort was prompt')
  const left = await a.participants(p)
  assert.equal(left.length, 1, 'the aborted waiter left no node')
  assert.equal(left[0].sessionId, a.sessionId())
  await holder.release()
})

test('an already aborted signal rejects at once', async () => {
  const c = await zk.client()
  const p = lockPath('pre-aborted')
  await assert.rejects(c.lock(p).acquire({ signal: AbortSignal.abort() }), (e) => e.code === 'CANCELLED')
  assert.deepEqual(await c.participants(p), [])
})

test('aborting one acquire does not cancel another on the same handle', async () => {
  const a = await zk.client()
  const b = await zk.client()
  const p = lockPath('abort-one')
  const holder = await a.lock(p).acquire()
  const lock = b.lock(p)
  const ac = new AbortController()
  const first = lock.acquire({ timeoutMs: 20000 })
  const second = lock.acquire({ signal: ac.signal })
  await sleep(200)
  ac.abort()
  await assert.rejects(second, (e) => e.code === 'CANCELLED')
  await holder.release()
  const g = await first
  assert.equal(g.state, 'HELD')
  await g.release()
  assert.deepEqual(await a.participants(p), [])
})

test('lock.cancel() cancels every acquire of the handle; a timeout after abort-free wait still works', async () => {
  const a = await zk.client()
  const b = await zk.client()
  const p = lockPath('cancel')
  const holder = await a.lock(p).acquire()
  const lock = b.lock(p)
  const w = lock.acquire()
  await sleep(200)
  lock.cancel()
  await assert.rejects(w, (e) => e.code === 'CANCELLED')
  assert.equal((await a.participants(p)).length, 1)
  await holder.release()
})

test('aborting one of 1,000 acquires that share one handle leaves the other 999 waiting, on few threads', async () => {
  const a = await zk.client()
  const b = await zk.client()
  const p = lockPath('abort-one-of-many')
  const holder = await a.lock(p).acquire()
  const lock = b.lock(p)
  const controllers = Array.from({ length: 1000 }, () => new AbortController())
  const outcomes = new Map()
  const waits = controllers.map((ac, i) =>
    lock.acquire({ signal: ac.signal }).then(
      (g) => outcomes.set(i, g),
      (e) => outcomes.set(i, e),
    ),
  )
  await sleep(300)
  // No thread per waiting acquire (they are futures on the core's runtime).
  const threads = Number(/Threads:\s+(\d+)/.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8'))[1])
  assert.ok(threads < 32, `${threads} threads with 1,000 acquires waiting`)
  controllers[500].abort()
  await waits[500]
  assert.equal(outcomes.get(500).code, 'CANCELLED')
  await sleep(200)
  assert.equal(outcomes.size, 1, 'only the aborted acquire ended')
  // Each acquire is its own contender: granted one after another, each
  // released as it comes.
  let granted = 0
  const all = waits.map((w, i) =>
    w.then(async () => {
      if (i === 500) return
      const g = outcomes.get(i)
      assert.equal(g.state, 'HELD')
      granted++
      await g.release()
    }),
  )
  await holder.release()
  await Promise.all(all)
  assert.equal(granted, 999)
  assert.deepEqual(await a.participants(p), [])
})

test('an abort racing with the grant never leaves a guard or a node behind', async () => {
  const a = await zk.client()
  const b = await zk.client()
  const p = lockPath('abort-race')
  const holder = a.lock(p)
  const waiter = b.lock(p)
  let granted = 0
  let cancelled = 0
  for (let i = 0; i < 30; i++) {
    const g = await holder.acquire()
    const ac = new AbortController()
    // What the caller sees: a guard only if it came before the abort.
    const outcome = waiter.acquire({ signal: ac.signal }).then(
      (guard) => ({ guard, afterAbort: ac.signal.aborted }),
      (e) => ({ code: e.code }),
    )
    await waitFor(async () => (await a.participants(p)).length === 2, 10000, 'queued')
    // Abort at moments around the grant: at once, or a little after the
    // release was answered (the grant is on its way or already made).
    const released = g.release()
    if (i % 3 === 0) ac.abort()
    await released
    if (i % 3 === 1) ac.abort()
    await new Promise((r) => setImmediate(r))
    ac.abort()
    const got = await outcome
    if (got.guard) {
      assert.equal(got.afterAbort, false, 'a guard was delivered after the abort')
      granted++
      await got.guard.release()
    } else {
      assert.equal(got.code, 'CANCELLED')
      cancelled++
    }
    await waitFor(async () => (await a.participants(p)).length === 0, 10000, 'no node left')
  }
  assert.equal(granted + cancelled, 30)
})

test('one AbortSignal shared by many acquires: one listener, no warning, all cancelled', async () => {
  // A listener per acquire made Node print MaxListenersExceededWarning from
  // the 11th acquire on one signal (an outside test).
  const { getEventListeners } = require('node:events')
  const a = await zk.client()
  const b = await zk.client()
  const p = lockPath('abort-shared')
  const holder = await a.lock(p).acquire()
  const warnings = []
  const onWarning = (w) => warnings.push(w)
  process.on('warning', onWarning)
  try {
    const ac = new AbortController()
    const waiting = Array.from({ length: 30 }, () =>
      b
        .lock(p)
        .acquire({ signal: ac.signal })
        .then(
          () => 'granted',
          (e) => e.code,
        ),
    )
    await waitFor(async () => (await a.participants(p)).length === 31, 10000, 'the 30 acquires to queue')
    assert.equal(getEventListeners(ac.signal, 'abort').length, 1)
    // A settled acquire stops watching: the others still are.
    const done = new AbortController()
    const g = await b.lock(lockPath('abort-shared-free')).acquire({ signal: done.signal })
    await g.release()
    assert.equal(getEventListeners(done.signal, 'abort').length, 0)
    ac.abort()
    assert.deepEqual(await Promise.all(waiting), Array(30).fill('CANCELLED'))
    assert.equal(getEventListeners(ac.signal, 'abort').length, 0)
    await sleep(50) // warnings are emitted on a later tick
    assert.deepEqual(
      warnings.filter((w) => w.name === 'MaxListenersExceededWarning'),
      [],
    )
  } finally {
    process.off('warning', onWarning)
    await holder.release()
  }
})
