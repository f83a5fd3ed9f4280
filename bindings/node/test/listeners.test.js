'use strict'
// client.onConnectionState: suspended, session lost, a new session, in
// order; cancel() takes a listener (and a guard's state callback) back.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { Client } = require('..')
const { useZooKeeper, lockPath, sleep, waitFor } = require('./helpers.js')

const zk = useZooKeeper()

test('connection listeners hear suspension, loss and the new session until cancelled', async () => {
  const c = await Client.connect({ hosts: zk.proxiedConnect, sessionTimeoutMs: 2000, operationTimeoutMs: 2000 })
  zk.clients.push(c)
  const seen = []
  const other = []
  const sub = c.onConnectionState((s) => seen.push(s))
  c.onConnectionState((s) => other.push(s))
  const guard = await c.lock(lockPath('listened')).acquire({ timeoutMs: 5000 })
  const lockEvents = []
  const lockSub = guard.onStateChange((s) => lockEvents.push(s))
  lockSub.cancel()
  lockSub.cancel()
  await zk.harness.command('blackhole')
  try {
    await waitFor(() => seen.includes('SUSPENDED'), 10000, 'SUSPENDED')
    await sleep(3000) // past the 2 s session
  } finally {
    await zk.harness.command('heal')
  }
  await waitFor(() => seen.includes('CONNECTED'), 20000, 'a new session')
  assert.deepEqual(seen, ['SUSPENDED', 'LOST', 'CONNECTED'])
  assert.deepEqual(lockEvents, [], 'a cancelled state callback was called')
  sub.cancel()
  await zk.harness.command('blackhole')
  try {
    await waitFor(() => other.length >= 4, 10000, 'the other listener')
  } finally {
    await zk.harness.command('heal')
  }
  assert.equal(seen.length, 3, 'a cancelled listener was called')
})

test('a listener that cancels itself on its first call gets no other, queued or not', async () => {
  const c = await Client.connect({ hosts: zk.proxiedConnect, sessionTimeoutMs: 4000 })
  zk.clients.push(c)
  const once = []
  const all = []
  const sub = c.onConnectionState((s) => {
    once.push(s)
    sub.cancel()
  })
  c.onConnectionState((s) => all.push(s))
  await zk.harness.command('drop-connections')
  await waitFor(() => all.includes('RECONNECTED'), 10000, 'reconnected')
  await sleep(200)
  assert.deepEqual(once, ['SUSPENDED'], 'a call after cancel()')
  // Calls already queued for this thread when cancel() is called are not
  // made: the connection drops while the thread is busy, then cancel().
  const late = []
  const lateSub = c.onConnectionState((s) => late.push(s))
  const dropped = zk.harness.command('drop-connections')
  const busyUntil = Date.now() + 1500
  while (Date.now() < busyUntil) {
    // the JavaScript thread is busy: the states queue up meanwhile
  }
  lateSub.cancel()
  await dropped
  await waitFor(() => all.filter((s) => s === 'RECONNECTED').length >= 2, 10000, 'reconnected again')
  await sleep(200)
  assert.deepEqual(late, [], 'queued calls were made after cancel()')
})

test('bad listeners are refused', async () => {
  const c = await zk.client()
  assert.throws(() => c.onConnectionState('nope'), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' })
  await c.close()
  assert.throws(() => c.onConnectionState(() => {}), { code: 'CLOSED' })
})
