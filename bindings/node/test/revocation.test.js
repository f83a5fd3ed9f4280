'use strict'
// Revocation, Curator-compatible: client.revoke() asks a holder to let go;
// the holder's guard.onRevocation() callbacks are told, it keeps the lock.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { ZkLockError } = require('..')
const { useZooKeeper, lockPath, sleep, waitFor } = require('./helpers.js')

const zk = useZooKeeper()

test('a revoked holder is told and keeps the lock; a gone node and a bad path', async () => {
  const holder = await zk.client()
  const other = await zk.client()
  const guard = await holder.lock(lockPath('revoke')).acquire({ timeoutMs: 5000 })
  assert.equal(guard.revocationRequested, false)
  let told = 0
  const sub = guard.onRevocation(() => {
    told += 1
  })
  assert.equal(await other.revoke(guard.nodePath), true)
  await waitFor(() => told === 1, 10000, 'the holder to be told')
  assert.equal(guard.revocationRequested, true)
  guard.check() // nothing was taken away
  assert.equal(guard.state, 'HELD')
  // A callback registered after the request is called once soon.
  let late = 0
  guard.onRevocation(() => {
    late += 1
  })
  await waitFor(() => late === 1, 10000, 'the late callback')
  // A cancelled subscription is not called again.
  sub.cancel()
  assert.equal(await other.revoke(guard.nodePath), true)
  await sleep(300)
  assert.equal(told, 1)
  const node = guard.nodePath
  assert.equal(await guard.release(), 'RELEASED')
  assert.equal(await other.revoke(node), false, 'the node is gone')
  await assert.rejects(other.revoke('not/a/path'), (e) => e instanceof ZkLockError && e.code === 'INVALID_PATH')
  assert.throws(() => guard.onRevocation(42), TypeError)
})
