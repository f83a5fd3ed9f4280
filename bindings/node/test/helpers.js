'use strict'
const { before, after } = require('node:test')
const { Harness } = require('./harness.js')

/**
 * Starts one ZooKeeper (with a proxy) for the test file: `zk.connect`,
 * `zk.proxiedConnect`, `zk.harness.command(...)`; stopped in after().
 * Clients made with `zk.client(opts)` are closed in after() too. `args`
 * are the harness's `serve` arguments (with `--tls`: `zk.secureConnect`,
 * `zk.tlsDir`).
 */
function useZooKeeper(args = ['--proxy']) {
  const { Client } = require('..')
  const zk = { clients: [] }
  before(async () => {
    zk.harness = await Harness.start(args)
    zk.connect = zk.harness.connect
    zk.proxiedConnect = zk.harness.proxiedConnect
    zk.secureConnect = zk.harness.secureConnect
    zk.tlsDir = zk.harness.tlsDir
  })
  after(async () => {
    for (const c of zk.clients) await c.close().catch(() => {})
    if (zk.harness) await zk.harness.shutdown()
  })
  zk.client = async (opts = {}) => {
    const c = await Client.connect({ hosts: zk.connect, ...opts })
    zk.clients.push(c)
    return c
  }
  return zk
}

let n = 0
/** A fresh lock path for one test. */
function lockPath(name) {
  n += 1
  return `/node-test/${process.pid}-${name}-${n}`
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Polls `fn` until it returns truthy or `ms` pass. */
async function waitFor(fn, ms, what) {
  const end = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (v) return v
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

module.exports = { useZooKeeper, lockPath, sleep, waitFor }
