'use strict'
// Counting semaphores: never more than the permits hold at once, a lease is
// a lock in every other way (signal, check, release), bad permits refused.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { ZkLockError } = require('..')
const { useZooKeeper, lockPath, sleep, waitFor } = require('./helpers.js')

const zk = useZooKeeper()

test('at most permits leases are held at once and every contender gets one', async () => {
  const clients = [await zk.client(), await zk.client(), await zk.client()]
  const p = lockPath('sem')
  let inside = 0
  let most = 0
  await Promise.all(
    [0, 1, 2, 3, 4, 5].map(async (i) => {
      const sem = clients[i % 3].semaphore(p, 2, `worker-${i}`)
      for (let round = 0; round < 3; round++) {
        const lease = await sem.acquire({ timeoutMs: 30000 })
        inside++
        most = Math.max(most, inside)
        lease.check()
        await sleep(20)
        inside--
        await lease.release()
      }
    }),
  )
  assert.equal(most, 2, 'two leases at once, never three')
  assert.deepEqual(await clients[0].participants(`${p}/leases`), [])
  assert.deepEqual(await clients[0].participants(`${p}/locks`), [])
})

test('a lease has the layout, signal and fencing token of a lock', async () => {
  const [a, b] = [await zk.client(), await zk.client()]
  const p = lockPath('sem-lease')
  const sem = a.semaphore(p, 1, Buffer.from('me'))
  assert.equal(sem.mode, 'LEASE')
  const lease = await sem.acquire({ timeoutMs: 5000 })
  assert.match(lease.nodePath, new RegExp(`^${p}/leases/_c_[0-9a-f-]{36}-lease-\\d{10}$`))
  assert.equal((await b.participants(`${p}/leases`))[0].data.toString(), 'me')
  const other = b.semaphore(p, 1)
  await assert.rejects(other.acquire({ timeoutMs: 300 }), { code: 'TIMEOUT' })
  assert.equal(await other.tryAcquire(), null)
  const ac = new AbortController()
  const waiting = other.acquire({ signal: ac.signal })
  await waitFor(async () => (await a.participants(`${p}/leases`)).length === 2, 5000, 'the waiter queues')
  ac.abort()
  await assert.rejects(waiting, { code: 'CANCELLED' })
  await waitFor(async () => (await a.participants(`${p}/leases`)).length === 1, 5000, 'the waiter leaves')
  const signal = lease.signal
  await a.close()
  await waitFor(() => signal.aborted, 5000, 'the lease signal aborts')
  const next = await other.acquire({ timeoutMs: 5000 })
  assert.ok(next.fencingToken > lease.fencingToken)
  await next.release()
})

test('bad permits are refused at once', async () => {
  const c = await zk.client()
  for (const permits of [0, -1, 1.5, 2 ** 31, Number.NaN, Number.POSITIVE_INFINITY, 1e300]) {
    assert.throws(
      () => c.semaphore('/s', permits),
      (e) => e instanceof ZkLockError && e.code === 'INVALID_ARGUMENT' && /permits/.test(e.message),
      `permits ${permits}`,
    )
  }
  for (const permits of ['2', 2n, null, undefined, {}]) {
    assert.throws(() => c.semaphore('/s', permits), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' })
  }
  assert.throws(() => c.semaphore('relative', 2), { code: 'INVALID_PATH' })
  assert.throws(() => c.semaphore('/s', 2, '__REVOKE__'), { code: 'INVALID_ARGUMENT' })
  assert.throws(() => c.semaphore('/s', 2, 'a\ud800'), { code: 'INVALID_ARGUMENT' })
})
