'use strict'
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { Client, ZkLockError } = require('..')
const { useZooKeeper, lockPath, sleep, waitFor } = require('./helpers.js')

const zk = useZooKeeper()

test('session expiry: SUSPENDED, then LOST after heal; check() throws LOCK_LOST', async () => {
  const c = await Client.connect({ hosts: zk.proxiedConnect, sessionTimeoutMs: 2000, operationTimeoutMs: 2000 })
  zk.clients.push(c)
  const other = await zk.client()
  const p = lockPath('lost')
  const guard = await c.lock(p).acquire({ timeoutMs: 5000 })
  const events = []
  guard.onStateChange((s) => events.push(s))
  guard.check()
  await zk.harness.command('blackhole')
  // check() fails before the server can expire the session.
  await waitFor(
    () => {
      try {
        guard.check()
        return false
      } catch (e) {
        assert.ok(e instanceof ZkLockError)
        return true
      }
    },
    5000,
    'check() to fail',
  )
  await waitFor(() => events.includes('SUSPENDED'), 5000, 'SUSPENDED event')
  // Another client gets the lock once the session expired on the server.
  const g2 = await other.lock(p).acquire({ timeoutMs: 15000 })
  await zk.harness.command('heal')
  await waitFor(() => events.includes('LOST'), 15000, 'LOST event')
  assert.equal(guard.state, 'LOST')
  assert.throws(
    () => guard.check(),
    (e) => e instanceof ZkLockError && e.code === 'LOCK_LOST',
  )
  assert.deepEqual(events.slice(0, 1), ['SUSPENDED'])
  assert.equal(events.at(-1), 'LOST')
  await assert.rejects(guard.release(), (e) => e.code === 'LOCK_LOST')
  await g2.release()
  await sleep(10)
})

test("guard.signal aborts with check()'s error before another client is granted the lock", async () => {
  const c = await Client.connect({ hosts: zk.proxiedConnect, sessionTimeoutMs: 2000, operationTimeoutMs: 2000 })
  zk.clients.push(c)
  const other = await zk.client()
  const p = lockPath('signal-lost')
  const guard = await c.lock(p).acquire({ timeoutMs: 5000 })
  const signal = guard.signal
  assert.ok(signal instanceof AbortSignal)
  assert.equal(guard.signal, signal, 'one signal per guard')
  assert.equal(signal.aborted, false)
  let abortedAt = null
  signal.addEventListener('abort', () => {
    abortedAt = process.hrtime.bigint()
  })
  await zk.harness.command('blackhole')
  try {
    const g2 = await other.lock(p).acquire({ timeoutMs: 15000 })
    const grantedAt = process.hrtime.bigint()
    // The old holder was told to stop before the new one was granted.
    assert.ok(abortedAt !== null && abortedAt < grantedAt, 'signal aborted before the next grant')
    assert.ok(signal.reason instanceof ZkLockError)
    assert.ok(['CONNECTION_LOSS', 'LOCK_LOST'].includes(signal.reason.code), signal.reason.code)
    await g2.release()
  } finally {
    await zk.harness.command('heal')
  }
})

test('guard.signal aborts NOT_HELD on release, at once for a guard already released; withLock passes it', async () => {
  const c = await zk.client()
  const p = lockPath('signal-release')
  const guard = await c.lock(p).acquire({ timeoutMs: 5000 })
  const signal = guard.signal
  await sleep(100)
  assert.equal(signal.aborted, false, 'held: not aborted')
  const aborted = new Promise((resolve) => signal.addEventListener('abort', resolve))
  await guard.release()
  await aborted
  assert.equal(signal.reason.code, 'NOT_HELD')
  // A signal first asked for after the release is aborted already.
  const late = await c.lock(p).acquire({ timeoutMs: 5000 })
  await late.release()
  assert.equal(late.signal.aborted, true)
  assert.equal(late.signal.reason.code, 'NOT_HELD')
  // withLock: fn gets the guard's signal, not aborted while it runs.
  let seen = null
  await c.withLock(p, async (g, s) => {
    assert.equal(s, g.signal)
    await sleep(50)
    seen = s
    assert.equal(s.aborted, false)
  })
  await waitFor(() => seen.aborted, 5000, 'the signal aborted after withLock released')
  // A fn that declares no second parameter gets no signal made for it.
  await c.withLock(p, async (g, ...rest) => {
    assert.equal(rest[0], undefined)
    assert.ok(g.signal instanceof AbortSignal, 'guard.signal on demand')
  })
  assert.throws(
    () => Object.getOwnPropertyDescriptor(Object.getPrototypeOf(guard), 'signal').get.call({}),
    (e) => e.code === 'ERR_INVALID_THIS',
  )
})

test('guard.signal aborts CLOSED when the client closes', async () => {
  const c = await Client.connect({ hosts: zk.connect, sessionTimeoutMs: 4000 })
  const guard = await c.lock(lockPath('signal-close')).acquire({ timeoutMs: 5000 })
  const signal = guard.signal
  const aborted = new Promise((resolve) => signal.addEventListener('abort', resolve))
  await c.close()
  await aborted
  assert.ok(['CLOSED', 'LOCK_LOST'].includes(signal.reason.code), signal.reason.code)
})
