'use strict'
// Waiting acquires must not sit on libuv's thread pool: with 4 pool threads
// and 8 acquires waiting, timers and fs calls still complete promptly.
process.env.UV_THREADPOOL_SIZE = '4' // before anything uses the pool
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fsp = require('node:fs/promises')
const { useZooKeeper, lockPath, sleep, waitFor } = require('./helpers.js')

const zk = useZooKeeper()

test('8 pending acquires behind a holder do not block timers or the fs thread pool', async () => {
  const holderClient = await zk.client()
  const p = lockPath('pool')
  const holder = await holderClient.lock(p).acquire()
  const waiters = []
  for (let i = 0; i < 8; i++) {
    const c = await zk.client()
    waiters.push(c.lock(p).acquire({ timeoutMs: 60000 }))
  }
  await waitFor(async () => (await holderClient.participants(p)).length === 9, 10000, '8 waiters queued')

  // Timers.
  let t0 = performance.now()
  await sleep(20)
  const timerMs = performance.now() - t0
  assert.ok(timerMs < 500, `a 20 ms timer took ${timerMs} ms`)

  // fs calls run on the thread pool: 16 reads at once need free pool threads.
  t0 = performance.now()
  await Promise.all(Array.from({ length: 16 }, () => fsp.readFile(__filename, 'utf8')))
  const fsMs = performance.now() - t0
  assert.ok(fsMs < 1000, `16 fs.promises.readFile took ${fsMs} ms`)

  // The event loop itself stays responsive while they wait.
  t0 = performance.now()
  await new Promise((r) => setImmediate(r))
  assert.ok(performance.now() - t0 < 200)

  // Hand the lock down the line: each waiter gets it in turn.
  await holder.release()
  let last = holder.fencingToken
  const pending = new Map(waiters.map((w, i) => [i, w.then((g) => ({ g, i }))]))
  while (pending.size > 0) {
    const { g, i } = await Promise.race(pending.values())
    pending.delete(i)
    assert.ok(g.fencingToken > last, 'tokens grow')
    last = g.fencingToken
    await g.release()
  }
})
