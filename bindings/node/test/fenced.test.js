'use strict'
// Fenced writes (guard.fencedMulti, multiGuard.fencedMulti): the caller's
// ZooKeeper writes in one transaction with a check of the holder's lock
// node(s), all or none. What was written is asked of ZooKeeper itself: a
// fenced check with a data version, made by another client's guard (every
// setData raises the version; a missing node fails with NoNode).
const { test } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const readline = require('node:readline')
const { spawn } = require('node:child_process')
const { ZkLockError } = require('..')
const { useZooKeeper, lockPath, waitFor } = require('./helpers.js')

const zk = useZooKeeper()

/** A guard of another client, on a lock of its own: ZooKeeper's view. */
async function observer(base) {
  return (await zk.client()).lock(`${base}-observer`).acquire({ timeoutMs: 10000 })
}

/** `'ok'` if ZooKeeper has `node` (at `version`, if given), else its code. */
async function has(observerGuard, node, version) {
  try {
    await observerGuard.fencedMulti([{ op: 'CHECK', path: node, ...(version === undefined ? {} : { version }) }])
    return 'ok'
  } catch (e) {
    assert.ok(e instanceof ZkLockError && e.failedOp, `${e}`)
    return e.failedOp.code
  }
}

const rejectsWith = (code, failedOp) => (e) => {
  assert.ok(e instanceof ZkLockError, `${e}`)
  assert.equal(e.code, code, e.message)
  assert.deepEqual(e.failedOp, failedOp, e.message)
  return true
}

test('every operation kind and its result', async () => {
  const base = lockPath('fenced-all')
  const state = `${base}-state`
  const client = await zk.client()
  const guard = await client.lock(base).acquire({ timeoutMs: 10000 })
  const results = await guard.fencedMulti([
    // An op is a FencedKind, in any case.
    { op: 'create', path: state, data: 'v0' },
    { op: 'CREATE', path: `${state}/job-`, data: Buffer.from('41'), mode: 'PERSISTENT_SEQUENTIAL' },
    { op: 'CREATE', path: `${state}/mine`, mode: 'EPHEMERAL' },
    { op: 'SET_DATA', path: state, data: 'v1' },
    { op: 'CHECK', path: state, version: 1 },
    { op: 'CREATE', path: `${state}/gone` },
    { op: 'DELETE', path: `${state}/gone` },
  ])
  assert.deepEqual(results, [
    { op: 'CREATE', path: state },
    { op: 'CREATE', path: `${state}/job-0000000000` },
    { op: 'CREATE', path: `${state}/mine` },
    { op: 'SET_DATA', version: 1 },
    { op: 'CHECK' },
    { op: 'CREATE', path: `${state}/gone` },
    { op: 'DELETE' },
  ])
  const again = await guard.fencedMulti([
    { op: 'SET_DATA', path: state, data: 'v2', version: results[3].version },
    { op: 'DELETE', path: `${state}/mine`, version: 0 },
  ])
  assert.deepEqual(again, [{ op: 'SET_DATA', version: 2 }, { op: 'DELETE' }])
  assert.deepEqual(await guard.fencedMulti([]), [])
  const seen = await observer(base)
  assert.equal(await has(seen, state, 2), 'ok')
  assert.equal(await has(seen, `${state}/job-0000000000`), 'ok')
  assert.equal(await has(seen, `${state}/mine`), 'NoNode')
  await guard.release()
  await seen.release()
})

test('a refused operation names its index and code, and nothing is written', async () => {
  const base = lockPath('fenced-refused')
  const state = `${base}-state`
  const guard = await (await zk.client()).lock(base).acquire({ timeoutMs: 10000 })
  await guard.fencedMulti([{ op: 'CREATE', path: state, data: 'v0' }])
  await assert.rejects(
    guard.fencedMulti([
      { op: 'CREATE', path: `${state}/new` },
      { op: 'SET_DATA', path: state, data: 'v1' },
      { op: 'SET_DATA', path: state, data: 'v2', version: 5 },
    ]),
    (e) => rejectsWith('ZOOKEEPER', { index: 2, code: 'BadVersion' })(e) && /nothing was written/.test(e.message),
  )
  const seen = await observer(base)
  assert.equal(await has(seen, state, 0), 'ok', 'the first setData was not made')
  assert.equal(await has(seen, `${state}/new`), 'NoNode', 'the create was not made')
  for (const [ops, failedOp] of [
    [
      [
        { op: 'CHECK', path: state },
        { op: 'SET_DATA', path: `${state}/none`, data: 'x' },
      ],
      { index: 1, code: 'NoNode' },
    ],
    [[{ op: 'CREATE', path: state }], { index: 0, code: 'NodeExists' }],
  ]) {
    await assert.rejects(guard.fencedMulti(ops), rejectsWith('ZOOKEEPER', failedOp))
  }
  // Errors that are not about an operation have no failedOp.
  await guard.release()
  await assert.rejects(
    guard.fencedMulti([{ op: 'SET_DATA', path: state, data: 'released' }]),
    (e) => rejectsWith('NOT_HELD', undefined)(e) && /nothing was written/.test(e.message),
  )
  assert.equal(await has(seen, state, 0), 'ok')
  await seen.release()
})

test('bad input is refused before anything is sent', async () => {
  const base = lockPath('fenced-input')
  const state = `${base}-state`
  const guard = await (await zk.client()).lock(base).acquire({ timeoutMs: 10000 })
  await guard.fencedMulti([{ op: 'CREATE', path: state, data: 'v0' }])
  // The lock's own queue is zklock's.
  await assert.rejects(
    guard.fencedMulti([
      { op: 'SET_DATA', path: state, data: 'x' },
      { op: 'SET_DATA', path: guard.nodePath, data: 'mine' },
    ]),
    (e) =>
      rejectsWith('INVALID_PATH', undefined)(e) &&
      e.message.includes('operation 1 (SET_DATA)') &&
      e.message.includes('inside the lock path'),
  )
  await assert.rejects(guard.fencedMulti([{ op: 'CHECK', path: 'relative' }]), rejectsWith('INVALID_PATH'))
  await assert.rejects(
    guard.fencedMulti([{ op: 'DELETE', path: state, version: -1 }]),
    (e) => rejectsWith('INVALID_ARGUMENT')(e) && e.message.includes('negative'),
  )
  await assert.rejects(
    guard.fencedMulti([{ op: 'SET_DATA', path: state, data: Buffer.alloc(1 << 20) }]),
    (e) => rejectsWith('INVALID_ARGUMENT')(e) && e.message.includes('jute.maxbuffer'),
  )
  // Values the binding translates: thrown, naming the operation.
  const invalid = [
    [{ op: 'rename', path: state }, 'op must be a FencedKind (CREATE, SET_DATA, DELETE or CHECK)'],
    [{ op: 'setData', path: state, data: 'x' }, 'op must be a FencedKind'],
    [{ op: 'CREATE', path: state, mode: 'BOGUS' }, 'mode must be'],
    [{ op: 'CREATE', path: state, version: 1 }, 'CREATE takes no version'],
    [{ op: 'DELETE', path: state, data: 'x' }, 'DELETE takes no data'],
    [{ op: 'CHECK', path: state, mode: 'EPHEMERAL' }, 'CHECK takes no mode'],
    [{ op: 'SET_DATA', path: state }, 'data is required'],
    [{ op: 'SET_DATA', path: state, data: 'x', version: 2 ** 31 }, 'not an integer of 32 bits'],
    [{ op: 'SET_DATA', path: state, data: 'x', version: 1.5 }, 'not an integer of 32 bits'],
    [{ op: 'CHECK', path: state, verison: 1 }, 'unknown option "verison"'],
    [{ op: 'SET_DATA', path: state, data: 'a\ud800' }, 'well-formed Unicode'],
  ]
  for (const [op, fragment] of invalid) {
    assert.throws(
      () => guard.fencedMulti([{ op: 'CHECK', path: state }, op]),
      (e) => rejectsWith('INVALID_ARGUMENT')(e) && e.message.includes(fragment) && e.message.includes('operation 1'),
      JSON.stringify(op),
    )
  }
  for (const bad of [
    'ops',
    null,
    { op: 'CHECK', path: state },
    [null],
    [{ op: 'CHECK', path: 5 }],
    [{ path: state }],
  ]) {
    assert.throws(
      () => guard.fencedMulti(bad),
      (e) => e instanceof TypeError && e.code === 'ERR_INVALID_ARG_TYPE',
    )
  }
  for (const version of ['1', null]) {
    assert.throws(
      () => guard.fencedMulti([{ op: 'CHECK', path: state, version }]),
      (e) => e instanceof TypeError,
    )
  }
  assert.throws(
    () => guard.fencedMulti([{ op: 'SET_DATA', path: state, data: 7 }]),
    (e) => e instanceof TypeError,
  )
  const seen = await observer(base)
  assert.equal(await has(seen, state, 0), 'ok', 'nothing written')
  await guard.release()
  await seen.release()
})

test('a multi-lock guard fences by every member', async () => {
  const base = lockPath('fenced-multi')
  const state = `${base}-state`
  const [a, b] = [`${base}/a`, `${base}/b`]
  const multi = (await zk.client()).multiLock([{ path: b }, { path: a, mode: 'WRITE' }])
  const g = await multi.acquire({ timeoutMs: 10000 })
  assert.deepEqual(
    await g.fencedMulti([
      { op: 'CREATE', path: state, data: 'both' },
      { op: 'CHECK', path: state },
    ]),
    [{ op: 'CREATE', path: state }, { op: 'CHECK' }],
  )
  await assert.rejects(g.fencedMulti([{ op: 'CREATE', path: `${b}/x` }]), rejectsWith('INVALID_PATH'))
  await assert.rejects(
    g.fencedMulti([{ op: 'SET_DATA', path: state, data: 'x', version: 3 }]),
    rejectsWith('ZOOKEEPER', { index: 0, code: 'BadVersion' }),
  )
  // A third party deletes the node of the member taken last (b): the
  // set's write is refused.
  const third = await observer(base)
  await third.fencedMulti([{ op: 'DELETE', path: g.nodePaths[1] }])
  await assert.rejects(
    g.fencedMulti([{ op: 'SET_DATA', path: state, data: 'one member only' }]),
    rejectsWith('LOCK_LOST'),
  )
  assert.equal(await has(third, state, 0), 'ok')
  await assert.rejects(g.release(), rejectsWith('LOCK_LOST'))
  await assert.rejects(g.fencedMulti([{ op: 'CHECK', path: state }]), rejectsWith('NOT_HELD'))
  await third.release()
})

test('a holder paused past its session writes nothing', async () => {
  // The scenario: A holds, checks, and stops itself (SIGSTOP) right
  // before its fenced write; its session expires; B takes the lock and
  // writes the state; A, resumed, makes its write at once: refused.
  const base = lockPath('fenced-paused')
  const state = `${base}-state`
  const client = await zk.client()
  const setup = await client.lock(`${base}-setup`).acquire({ timeoutMs: 10000 })
  await setup.fencedMulti([{ op: 'CREATE', path: state, data: 'initial' }])
  await setup.release()
  const child = spawn(process.execPath, [path.join(__dirname, 'fenced-holder.js'), zk.connect, base, state], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const next = async () => JSON.parse((await lines.next()).value)
  try {
    const a = await next()
    assert.deepEqual(await next(), { checked: true })
    // ZooKeeper's record: A's node goes when its session expires.
    await waitFor(async () => (await client.participants(base)).length === 0, 30000, "A's session to expire")
    const b = await client.lock(base).acquire({ timeoutMs: 30000 })
    assert.notEqual(String(b.sessionId), a.session)
    assert.deepEqual(await b.fencedMulti([{ op: 'SET_DATA', path: state, data: 'B' }]), [
      { op: 'SET_DATA', version: 1 },
    ])
    child.kill('SIGCONT')
    const outcome = await next()
    console.error(`paused holder's fenced write: ${JSON.stringify(outcome)}`)
    assert.ok(['LOCK_LOST', 'CONNECTION_LOSS'].includes(outcome.code), JSON.stringify(outcome))
    assert.equal(outcome.failedOp, null)
    // B's write is the last one made: the version is still B's, and B's
    // own fenced check says so.
    assert.deepEqual(await b.fencedMulti([{ op: 'CHECK', path: state, version: 1 }]), [{ op: 'CHECK' }])
    await b.release()
  } finally {
    child.kill('SIGCONT')
    child.kill('SIGKILL')
  }
})
