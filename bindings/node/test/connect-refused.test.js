'use strict'
// A connect where nothing listens fails at once, naming the address (issue 30).
const { test } = require('node:test')
const assert = require('node:assert/strict')
const net = require('node:net')
const { Client, ZkLockError } = require('..')

/** A loopback port that nothing listens on (bound, then let go). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

test('a refused connection is said at once with the address', async () => {
  const port = await freePort()
  const began = Date.now()
  await assert.rejects(
    Client.connect({ hosts: `127.0.0.1:${port}`, connectTimeoutMs: 30_000 }),
    (e) =>
      e instanceof ZkLockError &&
      e.code === 'CONNECTION_LOSS' &&
      e.message.includes(`connection refused by 127.0.0.1:${port}`),
  )
  const took = Date.now() - began
  assert.ok(took < 10_000, `refused, yet it waited ${took} ms of the 30 s connect timeout`)
})
