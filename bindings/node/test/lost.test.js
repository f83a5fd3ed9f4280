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
