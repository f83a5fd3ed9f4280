'use strict'
// client.metrics(): the core's counters and histograms as a plain object.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { useZooKeeper, lockPath } = require('./helpers.js')

const zk = useZooKeeper()

test('a grant, a timed-out try and a release are counted', async () => {
  const c = await zk.client()
  const other = await zk.client()
  let m = c.metrics()
  assert.deepEqual([m.acquiresGranted, m.acquiresTimedOut, m.holdTime.count], [0, 0, 0])
  const p = lockPath('metrics')
  const guard = await c.lock(p).acquire({ timeoutMs: 5000 })
  assert.equal(await other.lock(p).tryAcquire(), null)
  await assert.rejects(c.lock(p).acquire({ timeoutMs: 200 }), (e) => e.code === 'TIMEOUT')
  assert.equal(await guard.release(), 'RELEASED')
  m = c.metrics()
  assert.equal(m.acquiresGranted, 1)
  assert.equal(m.acquiresTimedOut, 1)
  assert.deepEqual([m.acquiresCancelled, m.acquiresFailed, m.losses], [0, 0, 0])
  assert.equal(m.waitTime.count, 1)
  assert.equal(m.holdTime.count, 1)
  assert.ok(m.holdTime.sumSeconds >= 0.2, `${m.holdTime.sumSeconds}`)
  for (const h of [m.waitTime, m.holdTime]) {
    assert.equal(h.buckets.length, 11)
    const les = h.buckets.map((b) => b.le)
    const counts = h.buckets.map((b) => b.count)
    assert.deepEqual(
      les,
      [...les].sort((a, b) => a - b),
    )
    assert.equal(les.at(-1), 300)
    assert.deepEqual(
      counts,
      [...counts].sort((a, b) => a - b),
      'cumulative',
    )
    assert.ok(counts.at(-1) <= h.count)
  }
  assert.ok(m.requests.create2 >= 2, JSON.stringify(m.requests))
  assert.equal(other.metrics().acquiresTimedOut, 1)
  await c.close()
  assert.equal(c.metrics().acquiresGranted, 1, 'also after close()')
})
