'use strict'
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const zklock = require('..')
const { testBuild } = require('./test-build.js')
const { Client, Guard, ZkLockError, ERROR_CODES } = zklock
const { useZooKeeper, lockPath, sleep } = require('./helpers.js')

const zk = useZooKeeper()

test('connect, acquire, release', async () => {
  const c = await zk.client()
  assert.equal(typeof c.sessionId(), 'bigint')
  const lock = c.lock(lockPath('basic'))
  assert.equal(lock.mode, 'EXCLUSIVE')
  const g = await lock.acquire({ timeoutMs: 5000 })
  assert.ok(g instanceof Guard)
  assert.equal(g.state, 'HELD')
  assert.equal(typeof g.fencingToken, 'bigint')
  assert.ok(g.nodePath.startsWith(lock.path + '/_c_'))
  assert.equal(g.sessionId, c.sessionId())
  assert.equal(lock.held, true)
  g.check()
  const parts = await c.participants(lock.path)
  assert.equal(parts.length, 1)
  assert.equal(parts[0].holds, true)
  assert.equal(parts[0].kind, 'WRITER')
  assert.equal(parts[0].sessionId, c.sessionId())
  assert.equal(await g.release(), 'RELEASED')
  assert.equal(g.state, 'RELEASED')
  assert.equal(lock.held, false)
  await assert.rejects(g.release(), (e) => e instanceof ZkLockError && e.code === 'NOT_HELD')
  assert.throws(
    () => g.check(),
    (e) => e instanceof ZkLockError && e.code === 'NOT_HELD',
  )
  assert.deepEqual(await c.participants(lock.path), [])
})

test('acquires of one handle exclude each other; a released guard says so', async () => {
  const c = await zk.client()
  const lock = c.lock(lockPath('contenders'))
  const g1 = await lock.acquire({ timeoutMs: 5000 })
  await assert.rejects(lock.acquire({ timeoutMs: 300 }), (e) => e instanceof ZkLockError && e.code === 'TIMEOUT')
  const second = lock.acquire({ timeoutMs: 10000 })
  await sleep(200)
  assert.equal((await c.participants(lock.path)).length, 2, 'the second acquire has its own node')
  assert.equal(await g1.release(), 'RELEASED')
  assert.equal(g1.state, 'RELEASED')
  assert.throws(
    () => g1.check(),
    (e) => e instanceof ZkLockError && e.code === 'NOT_HELD',
  )
  const g2 = await second
  assert.notEqual(g2.nodePath, g1.nodePath)
  assert.equal(g2.state, 'HELD')
  g2.check()
  assert.equal(lock.held, true)
  assert.equal(await g2.release(), 'RELEASED')
  assert.equal(lock.held, false)
  // Many async flows sharing one handle: never two inside.
  let inside = 0
  let most = 0
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      for (let i = 0; i < 3; i++) {
        const g = await lock.acquire({ timeoutMs: 60000 })
        most = Math.max(most, ++inside)
        await sleep(2)
        inside--
        await g.release()
      }
    }),
  )
  assert.equal(most, 1, `${most} flows of one handle were inside at once`)
})

test('timeout and tryAcquire; tokens grow', async () => {
  const a = await zk.client()
  const b = await zk.client()
  const p = lockPath('timeout')
  const g = await a.lock(p).acquire()
  const t0 = Date.now()
  await assert.rejects(b.lock(p).acquire({ timeoutMs: 300 }), (e) => e instanceof ZkLockError && e.code === 'TIMEOUT')
  assert.ok(Date.now() - t0 >= 280, 'waited for the deadline')
  assert.equal(await b.lock(p).tryAcquire(), null)
  assert.equal((await a.participants(p)).length, 1, 'no node left by the timed-out acquire')
  const waiting = b.lock(p).acquire({ timeoutMs: 10000 })
  await g.release()
  const g2 = await waiting
  assert.ok(g2.fencingToken > g.fencingToken)
  const again = await a.lock(p).tryAcquire()
  assert.equal(again, null)
  await g2.release()
})

test('withLock and Symbol.asyncDispose release the lock', async () => {
  const c = await zk.client()
  const p = lockPath('withlock')
  const r = await c.withLock(p, async (guard) => {
    assert.equal(guard.state, 'HELD')
    assert.equal((await c.participants(p)).length, 1)
    return 42
  })
  assert.equal(r, 42)
  assert.deepEqual(await c.participants(p), [])
  await assert.rejects(
    c.withLock(p, async () => {
      throw new Error('boom')
    }),
    /boom/,
  )
  assert.deepEqual(await c.participants(p), [])
  const asyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose')
  const g = await c.lock(p).acquire()
  await g[asyncDispose]()
  assert.equal(g.state, 'RELEASED')
  await g[asyncDispose]() // second time: nothing
  assert.deepEqual(await c.participants(p), [])
})

test('read/write locks: readers share, a writer excludes, downgrade, no upgrade', async () => {
  const a = await zk.client()
  const b = await zk.client()
  const p = lockPath('rw')
  const r1 = await a.readLock(p).acquire({ timeoutMs: 5000 })
  const r2 = await b.readLock(p).acquire({ timeoutMs: 5000 })
  await assert.rejects(b.writeLock(p).acquire({ timeoutMs: 200 }), (e) => e.code === 'TIMEOUT')
  await r1.release()
  await r2.release()
  const w = await b.writeLock(p).acquire({ timeoutMs: 5000 })
  assert.equal(await a.readLock(p).tryAcquire(), null)
  await w.release()

  const rw = a.readWriteLock(p)
  assert.equal(rw.read.mode, 'READ')
  assert.equal(rw.write.mode, 'WRITE')
  const wg = await rw.write.acquire({ timeoutMs: 5000 })
  const rg = await wg.downgrade() // immediate, with the write node's sequence
  assert.equal(rg.sequence, wg.sequence)
  await wg.release()
  assert.equal(rg.state, 'HELD')
  await assert.rejects(rg.downgrade(), (e) => e instanceof ZkLockError && e.code === 'INVALID_ARGUMENT')
  // No implicit upgrade or downgrade: the write side waits behind our read.
  await assert.rejects(rw.write.acquire({ timeoutMs: 300 }), (e) => e instanceof ZkLockError && e.code === 'TIMEOUT')
  await rg.release()
})

test('every error kind of the core maps to a ZkLockError with its name', () => {
  assert.ok(ERROR_CODES.length >= 12)
  const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8')
  const union = dts.slice(dts.indexOf('export type ZkLockErrorCode'), dts.indexOf('export declare const ERROR_CODES'))
  ERROR_CODES.forEach((code, i) => {
    const e = testBuild().__errorForKind(i)
    assert.ok(e instanceof ZkLockError, `${code} is a ZkLockError`)
    assert.ok(e instanceof Error)
    assert.equal(e.code, code)
    assert.equal(e.name, 'ZkLockError')
    assert.match(e.message, new RegExp(code))
    assert.ok(union.includes(`'${code}'`), `index.d.ts ZkLockErrorCode lists ${code}`)
  })
  assert.throws(() => testBuild().__errorForKind(ERROR_CODES.length), RangeError)
})

test('bad input: TypeError, INVALID_ARGUMENT, INVALID_PATH, CLOSED (more in hostile.test.js)', async () => {
  const c = await zk.client()
  const typeErr = (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE'
  const invalidArg = (e) => e instanceof ZkLockError && e.code === 'INVALID_ARGUMENT'
  assert.throws(() => c.lock(5), typeErr)
  assert.throws(() => c.lock(), typeErr)
  assert.throws(() => c.readWriteLock({}), typeErr)
  assert.throws(
    () => c.lock('no-slash'),
    (e) => e instanceof ZkLockError && e.code === 'INVALID_PATH',
  )
  assert.throws(
    () => c.lock('/a//b'),
    (e) => e.code === 'INVALID_PATH',
  )
  const lock = c.lock(lockPath('bad'))
  assert.throws(() => lock.acquire({ timeoutMs: -1 }), invalidArg)
  assert.throws(() => lock.acquire({ timeoutMs: NaN }), invalidArg)
  assert.throws(() => lock.acquire({ timeoutMs: '10' }), typeErr)
  assert.throws(() => lock.acquire('10'), typeErr)
  assert.throws(() => lock.acquire({ signal: {} }), typeErr)
  assert.throws(() => Client.connect(), typeErr)
  assert.throws(() => Client.connect({ hosts: 1 }), typeErr)
  assert.throws(() => Client.connect({ hosts: zk.connect, sessionTimeoutMs: -5 }), invalidArg)
  assert.throws(() => Client.connect({ hosts: zk.connect, connectTimeoutMs: 0 }), invalidArg)
  await assert.rejects(Client.connect({ hosts: '' }), (e) => e instanceof ZkLockError && e.code === 'INVALID_ARGUMENT')
  await assert.rejects(c.withLock('/x', 'not a function'), typeErr)
  const g = await lock.acquire()
  assert.throws(() => g.onStateChange('nope'), typeErr)
  await c.close()
  assert.equal(c.closed, true)
  assert.throws(
    () => c.lock('/x'),
    (e) => e instanceof ZkLockError && e.code === 'CLOSED',
  )
  await assert.rejects(lock.acquire(), (e) => e.code === 'CLOSED')
  await assert.rejects(c.participants('/x'), (e) => e.code === 'CLOSED')
  assert.equal(g.state, 'LOST')
  await c.close() // idempotent
})
