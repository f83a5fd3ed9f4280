'use strict'
// A changing ensemble: client.setHosts() moves a client to a new server
// list keeping its session and its locks (the core's Client::set_hosts).
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { Client, ZkLockError } = require('..')
const { useZooKeeper, lockPath, sleep, waitFor } = require('./helpers.js')

const zk = useZooKeeper()

test('a client moved off the proxy keeps its session and lock when the proxy goes', async () => {
  const before = (await zk.harness.command('connections')).count
  const c = await Client.connect({ hosts: zk.proxiedConnect, sessionTimeoutMs: 2000, operationTimeoutMs: 2000 })
  zk.clients.push(c)
  const session = c.sessionId()
  const guard = await c.lock(lockPath('move')).acquire({ timeoutMs: 5000 })
  assert.equal((await zk.harness.command('connections')).count, before + 1)
  c.setHosts(zk.connect)
  await waitFor(
    async () => (await zk.harness.command('connections')).count === before,
    10000,
    'the client to leave the proxy',
  )
  await waitFor(() => guard.state === 'HELD', 10000, 'the lock to be held again')
  await zk.harness.command('blackhole')
  try {
    // Still on the proxy, the safety clock (under the 2 s session timeout)
    // would make check() throw within this time.
    const end = Date.now() + 3000
    while (Date.now() < end) {
      guard.check()
      await sleep(100)
    }
  } finally {
    await zk.harness.command('heal')
  }
  assert.equal(c.sessionId(), session)
  const holders = (await c.participants(guard.nodePath.replace(/\/[^/]*$/, ''))).filter((p) => p.holds)
  assert.equal(holders.length, 1)
  assert.equal(holders[0].sessionId, session, 'the node is still ours')
  assert.equal(await guard.release(), 'RELEASED')
})

test('bad lists are refused, a closed client says so', async () => {
  const c = await zk.client()
  for (const bad of ['', 'host:notaport', 'a,,b', `${zk.connect}/another-chroot`]) {
    assert.throws(
      () => c.setHosts(bad),
      (e) => e instanceof ZkLockError && e.code === 'INVALID_ARGUMENT',
    )
  }
  c.setHosts(zk.connect)
  await c.close()
  assert.throws(
    () => c.setHosts(zk.connect),
    (e) => e instanceof ZkLockError && e.code === 'CLOSED',
  )
})
