'use strict'
// The core's log records through setLogger: a connect at info with the
// session id; null goes back to the default; bad arguments are refused.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { setLogger, ZkLockError } = require('..')
const { useZooKeeper, waitFor } = require('./helpers.js')

const zk = useZooKeeper()

test('setLogger receives connects with the session id, at the level asked for', async () => {
  const records = []
  setLogger((level, message) => records.push({ level, message }), 'debug')
  try {
    const c = await zk.client()
    const session = `0x${BigInt(c.sessionId()).toString(16)}`
    await waitFor(
      () =>
        records.some((r) => r.level === 'INFO' && r.message.includes(`connected to`) && r.message.includes(session)),
      5000,
      'the connect record',
    )
    const guard = await c.lock('/logging-node').acquire({ timeoutMs: 5000 })
    await waitFor(
      () => records.some((r) => r.level === 'DEBUG' && r.message.includes('granted /logging-node')),
      5000,
      'the grant record',
    )
    await guard.release()
    assert.ok(records.every((r) => !r.message.startsWith('zklock: ')))
  } finally {
    setLogger(null)
  }
})

test('bad loggers and levels are refused', () => {
  assert.throws(() => setLogger('console'), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' })
  assert.throws(() => setLogger(() => {}, 3), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' })
  assert.throws(
    () => setLogger(() => {}, 'loud'),
    (e) => e instanceof ZkLockError && e.code === 'INVALID_ARGUMENT' && /log level/.test(e.message),
  )
  setLogger(null)
})
