'use strict'
// Leader election: one leader at a time in join order, client.leader(),
// resigning hands over, withLeadership's signal, bad ids refused at once.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { ZkLockError } = require('..')
const { useZooKeeper, lockPath, sleep, waitFor } = require('./helpers.js')

const zk = useZooKeeper()

test('participants lead one at a time in join order; resigning hands over', async () => {
  const [a, b] = [await zk.client(), await zk.client()]
  const p = lockPath('elect')
  assert.equal(await a.leader(p), null)
  const first = a.election(p, 'first')
  assert.equal(first.mode, 'LEADER')
  const leading = await first.acquire({ timeoutMs: 5000 })
  assert.match(leading.nodePath, /-latch-\d{10}$/)
  const leader = await b.leader(p)
  assert.equal(leader.data.toString(), 'first')
  assert.equal(leader.sessionId, a.sessionId())
  const second = b.election(p, Buffer.from('second'))
  let granted = null
  const waiting = second.acquire({ timeoutMs: 20000 }).then((g) => {
    granted = g
    return g
  })
  await waitFor(async () => (await a.participants(p)).length === 2, 5000, 'second to join')
  assert.deepEqual(
    (await a.participants(p)).map((x) => x.data.toString()),
    ['first', 'second'],
  )
  await sleep(200)
  assert.equal(granted, null, 'a second leader')
  await leading.release()
  const g = await waiting
  assert.equal((await a.leader(p)).data.toString(), 'second')
  await g.release()
  assert.equal(await a.leader(p), null)
})

test('withLeadership runs fn while leading; its signal aborts when leadership is lost', async () => {
  const c = await zk.client()
  const other = await zk.client()
  const p = lockPath('elect-lost')
  const result = await c.withLeadership(p, 'me', async (guard, signal) => {
    assert.equal(signal, guard.signal)
    assert.equal((await other.leader(p)).data.toString(), 'me')
    return 42
  })
  assert.equal(result, 42)
  // fn may resign itself: its result still comes back.
  const resigned = await c.withLeadership(p, 'me', async (guard) => {
    await guard.release()
    return 7
  })
  assert.equal(resigned, 7)
  assert.equal(await other.leader(p), null, 'resigned after fn')
  // Leadership lost while fn runs (our node deleted by a third party: here
  // a zklock lock handle cannot delete, so expire it by closing the client).
  const doomed = await zk.client()
  const err = await doomed
    .withLeadership(p, 'doomed', async (_guard, signal) => {
      const aborted = new Promise((resolve) => signal.addEventListener('abort', resolve))
      setTimeout(() => doomed.close(), 50)
      await aborted
      assert.ok(signal.reason instanceof ZkLockError)
    })
    .then(
      () => null,
      (e) => e,
    )
  assert.ok(err instanceof ZkLockError, String(err))
  assert.ok(['LOCK_LOST', 'CLOSED'].includes(err.code), err.code)
})

test('bad ids and paths are refused at once', async () => {
  const c = await zk.client()
  const p = lockPath('elect-bad')
  assert.throws(
    () => c.election(p, Buffer.alloc(64 * 1024 + 1)),
    (e) => e instanceof ZkLockError && e.code === 'INVALID_ARGUMENT',
  )
  assert.throws(
    () => c.election(p, '__REVOKE__'),
    (e) => e instanceof ZkLockError && e.code === 'INVALID_ARGUMENT',
  )
  assert.throws(
    () => c.election('relative', 'x'),
    (e) => e instanceof ZkLockError && e.code === 'INVALID_PATH',
  )
  assert.throws(
    () => c.election(p, 'a\udc00b'),
    (e) => e instanceof ZkLockError && e.code === 'INVALID_ARGUMENT',
  )
  assert.throws(
    () => c.election(p, 5),
    (e) => e instanceof TypeError,
  )
  await assert.rejects(c.withLeadership(p, 'x', 'not a function'), (e) => e instanceof TypeError)
})
