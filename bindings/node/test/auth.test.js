'use strict'
// Digest authentication (ConnectOptions.auth), as in C, Python and Rust:
// an authenticated session takes locks; bad credentials are refused at once.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const { Client, ZkLockError } = require('..')
const { useZooKeeper, lockPath } = require('./helpers.js')

const zk = useZooKeeper()

test('a digest-authenticated client takes locks', async () => {
  const c = await Client.connect({ hosts: zk.connect, auth: { user: 'alice', password: 's3cret' } })
  zk.clients.push(c)
  const guard = await c.lock(lockPath('auth')).acquire({ timeoutMs: 5000 })
  guard.check()
  await guard.release()
})

test('bad digest credentials are refused at once', async () => {
  for (const auth of [
    { user: '', password: 'pw' },
    { user: 'us:er', password: 'pw' },
    { user: 'u', password: 'x'.repeat(64 * 1024) },
  ]) {
    await assert.rejects(
      Client.connect({ hosts: zk.connect, auth }),
      (e) => e instanceof ZkLockError && e.code === 'INVALID_ARGUMENT' && /digest/.test(e.message),
      JSON.stringify(auth).slice(0, 40),
    )
  }
  await assert.rejects(async () => Client.connect({ hosts: zk.connect, auth: { user: 'u' } }), TypeError)
})
