'use strict'
// Digest authentication, ACLs and TLS (ConnectOptions.auth, .acl, .tls), as
// in C, Python and Rust: an authenticated session takes locks; bad
// credentials are refused at once; a creator ACL shuts out other
// identities with NO_AUTH; TLS with the right CA locks, another CA fails at
// once saying why.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { Client, ZkLockError } = require('..')
const { useZooKeeper, lockPath } = require('./helpers.js')

const zk = useZooKeeper(['--proxy', '--tls', '--sasl', 'alice:pw-alice'])

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

test('a creator ACL shuts out other identities with NO_AUTH', async () => {
  const p = lockPath('acl')
  const alice = await zk.client({ auth: { user: 'alice', password: 'pw-alice' }, acl: 'creator' })
  const alice2 = await zk.client({ auth: { user: 'alice', password: 'pw-alice' }, acl: 'creator' })
  const mallory = await zk.client({ auth: { user: 'mallory', password: 'pw' }, acl: 'creator' })
  const nobody = await zk.client()
  const guard = await alice.lock(p).acquire({ timeoutMs: 10000 })
  for (const other of [mallory, nobody]) {
    const began = Date.now()
    await assert.rejects(
      other.lock(p).acquire({ timeoutMs: 10000 }),
      (e) => e instanceof ZkLockError && e.code === 'NO_AUTH' && /NoAuth/.test(e.message),
    )
    assert.ok(Date.now() - began < 5000)
  }
  const second = alice2.lock(p)
  assert.equal(await second.tryAcquire(), null)
  await guard.release()
  const g2 = await second.acquire({ timeoutMs: 10000 })
  await g2.release()
  await assert.rejects(
    async () => Client.connect({ hosts: zk.connect, acl: 'world:anyone:rx' }),
    (e) => e instanceof ZkLockError && e.code === 'INVALID_ARGUMENT' && /unknown permission/.test(e.message),
  )
  await assert.rejects(async () => Client.connect({ hosts: zk.connect, acl: ['creator'] }), TypeError)
})

test('TLS with the right CA locks; another CA fails at once saying why', async () => {
  const file = (name) => path.join(zk.tlsDir, name)
  const c = await zk.client({
    hosts: zk.secureConnect,
    tls: { ca: file('ca.pem'), cert: file('client.pem'), key: file('client-key.pem') },
  })
  const p = lockPath('tls')
  const guard = await c.lock(p).acquire({ timeoutMs: 10000 })
  // Seen from outside, through the plaintext port.
  const plain = await zk.client()
  assert.deepEqual(
    (await plain.participants(p)).map((x) => x.name),
    [guard.nodePath.split('/').pop()],
  )
  await guard.release()
  const began = Date.now()
  await assert.rejects(
    Client.connect({ hosts: zk.secureConnect, connectTimeoutMs: 8000, tls: { ca: file('other-ca.pem') } }),
    (e) => e instanceof ZkLockError && e.code === 'CONNECTION_LOSS' && /UnknownIssuer/.test(e.message),
  )
  assert.ok(Date.now() - began < 6000)
  await assert.rejects(
    async () => Client.connect({ hosts: zk.secureConnect, tls: { ca: file('ca.pem'), cert: file('client.pem') } }),
    (e) => e instanceof ZkLockError && e.code === 'INVALID_ARGUMENT' && /needs its key/.test(e.message),
  )
  await assert.rejects(
    async () => Client.connect({ hosts: zk.secureConnect, tls: { ca: '/nonexistent/ca.pem' } }),
    (e) => e instanceof ZkLockError && /\/nonexistent\/ca\.pem/.test(e.message),
  )
})

test('SASL DIGEST-MD5: a wrong password is NO_AUTH, the right one locks', async () => {
  await assert.rejects(
    Client.connect({ hosts: zk.connect, sasl: { user: 'alice', password: 'wrong' } }),
    (e) => e instanceof ZkLockError && e.code === 'NO_AUTH' && /AuthFailed/.test(e.message),
  )
  const c = await zk.client({ sasl: { user: 'alice', password: 'pw-alice' }, acl: 'sasl:alice:cdrwa' })
  const g = await c.lock(lockPath('sasl')).acquire({ timeoutMs: 10000 })
  await g.release()
})
