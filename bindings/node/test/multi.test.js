'use strict'
// Multi-locks: all or none, one order, one deadline and one AbortSignal;
// the guard's check(), signal and release cover every member.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { ZkLockError } = require('..')
const { useZooKeeper, lockPath, waitFor } = require('./helpers.js')

const zk = useZooKeeper()

test('overlapping multi-locks in opposite orders exclude each other and never deadlock', async () => {
  const base = lockPath('multi')
  const [a, b, c] = ['a', 'b', 'c'].map((x) => `${base}/${x}`)
  const clients = [await zk.client(), await zk.client()]
  const multis = [
    clients[0].multiLock([{ path: a }, { path: b }, { path: c }]),
    clients[1].multiLock([{ path: c }, { path: b, mode: 'EXCLUSIVE' }, { path: a }]),
  ]
  assert.deepEqual(multis[1].paths, [a, b, c])
  let inside = 0
  await Promise.all(
    multis.map(async (m) => {
      for (let i = 0; i < 15; i++) {
        const g = await m.acquire({ timeoutMs: 20000 })
        assert.equal(inside++, 0, 'two holders')
        g.check()
        await new Promise((r) => setTimeout(r, 2))
        inside--
        assert.equal(await g.release(), 'RELEASED')
      }
    }),
  )
  for (const p of [a, b, c]) assert.equal((await clients[0].participants(p)).length, 0)
})

test("all or none under a timeout and an abort; the set's signal and release", async () => {
  const base = lockPath('multi-none')
  const [x, y, z] = ['x', 'y', 'z'].map((n) => `${base}/${n}`)
  const [a, b] = [await zk.client(), await zk.client()]
  const held = await b.lock(z).acquire({ timeoutMs: 5000 })
  const multi = a.multiLock([{ path: z }, { path: x, mode: 'WRITE' }, { path: y, mode: 'READ' }])
  await assert.rejects(multi.acquire({ timeoutMs: 300 }), (e) => e instanceof ZkLockError && e.code === 'TIMEOUT')
  assert.equal(await multi.tryAcquire(), null)
  assert.equal((await a.participants(x)).length + (await a.participants(y)).length, 0, 'members given back')
  const controller = new AbortController()
  const waiting = multi.acquire({ signal: controller.signal })
  await waitFor(async () => (await a.participants(z)).length === 2, 5000, 'waiting on z')
  controller.abort()
  await assert.rejects(waiting, (e) => e instanceof ZkLockError && e.code === 'CANCELLED' && e.message.includes(z))
  await waitFor(async () => (await a.participants(x)).length === 0, 5000, 'x given back')
  await held.release()
  const g = await multi.acquire({ timeoutMs: 5000 })
  assert.equal(g.state, 'HELD')
  assert.equal(g.fencingTokens.length, 3)
  assert.match(g.nodePaths[0], new RegExp(`^${x}/`))
  const aborted = new Promise((resolve) => g.signal.addEventListener('abort', resolve))
  // Releasing the set aborts its signal with NOT_HELD.
  assert.equal(await g.release(), 'RELEASED')
  await aborted
  assert.equal(g.signal.reason.code, 'NOT_HELD')
  assert.equal(g.state, 'RELEASED')
  await assert.rejects(g.release(), (e) => e.code === 'NOT_HELD')
})

test('bad members are refused at once', async () => {
  const c = await zk.client()
  const p = lockPath('multi-bad')
  const code = (f) => {
    try {
      f()
    } catch (e) {
      return e instanceof ZkLockError ? e.code : e.constructor.name
    }
    return 'no error'
  }
  assert.equal(
    code(() => c.multiLock([])),
    'INVALID_ARGUMENT',
  )
  assert.equal(
    code(() => c.multiLock([{ path: p }, { path: p, mode: 'READ' }])),
    'INVALID_ARGUMENT',
  )
  assert.equal(
    code(() => c.multiLock([{ path: p, mode: 'LEADER' }])),
    'INVALID_ARGUMENT',
  )
  assert.equal(
    code(() => c.multiLock([{ path: 'relative' }])),
    'INVALID_PATH',
  )
  assert.equal(
    code(() => c.multiLock('nope')),
    'TypeError',
  )
})
