'use strict'
// A semaphore whose permits are a shared count (Curator's
// InterProcessSemaphoreV2 with a SharedCountReader): waiters get in when the
// count grows, held leases stay when it shrinks; bad counts are refused.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { ZkLockError } = require('..')
const { useZooKeeper, lockPath, sleep } = require('./helpers.js')

const zk = useZooKeeper()
const code = (c) => (e) => e instanceof ZkLockError && e.code === c

test('a semaphore on a shared count follows it', async () => {
  const a = await zk.client()
  const b = await zk.client()
  const path = lockPath('shared-count')
  const count = `${path}-count`
  await a.setSharedCount(count, 1)
  assert.equal(await b.sharedCount(count), 1)
  const first = await a.semaphoreWithCount(path, count, 'first').acquire({ timeoutMs: 5000 })
  const second = b.semaphoreWithCount(path, count)
  await assert.rejects(second.acquire({ timeoutMs: 300 }), code('TIMEOUT'))
  let granted = null
  const waiting = second.acquire({ timeoutMs: 20000 }).then((g) => {
    granted = g
  })
  await sleep(300)
  assert.equal(granted, null, 'one permit, held')
  await a.setSharedCount(count, 2)
  await waiting
  assert.ok(granted, 'the count grew: the waiter gets the second lease')
  // Shrunk: both stay held; a third waits until fewer than 1 are held.
  await a.setSharedCount(count, 1)
  first.check()
  granted.check()
  const third = a.semaphoreWithCount(path, count)
  await assert.rejects(third.acquire({ timeoutMs: 300 }), code('TIMEOUT'))
  await granted.release()
  await assert.rejects(third.acquire({ timeoutMs: 300 }), code('TIMEOUT'))
  await first.release()
  const g = await third.acquire({ timeoutMs: 5000 })
  await g.release()
})

test('a missing count and bad arguments are refused', async () => {
  const c = await zk.client()
  const path = lockPath('shared-count-bad')
  const count = `${path}-count`
  await assert.rejects(c.semaphoreWithCount(path, count).acquire({ timeoutMs: 5000 }), code('ZOOKEEPER'))
  await assert.rejects(c.sharedCount(count), code('ZOOKEEPER'))
  assert.deepEqual(await c.participants(`${path}/leases`), [], 'nothing left behind')
  for (const bad of [-1, 2 ** 31, 1.5, Number.NaN]) {
    await assert.rejects(c.setSharedCount(count, bad), code('INVALID_ARGUMENT'), String(bad))
  }
  assert.throws(() => c.setSharedCount(count, '3'), TypeError)
  assert.throws(() => c.semaphoreWithCount(path, `${path}/inside`), code('INVALID_ARGUMENT'))
  assert.throws(() => c.semaphoreWithCount(path, 'relative'), code('INVALID_PATH'))
  assert.throws(() => c.semaphoreWithCount(path, count, '\uD800'), code('INVALID_ARGUMENT'))
  await assert.rejects(c.sharedCount('relative'), code('INVALID_PATH'))
  await c.close()
  await assert.rejects(c.setSharedCount(count, 1), code('CLOSED'))
})
