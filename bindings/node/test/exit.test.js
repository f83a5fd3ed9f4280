'use strict'
// The exit of the main thread closes every open session at once (issue
// 30): a process that holds a lock and waits in an acquire, then calls
// process.exit() (or just ends), leaves no node behind for its 30 s session
// timeout; and with the server cut off, the exit is not held up (at most
// about 1 s is spent on the close). Without the close, the nodes stayed
// until the session expired.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const readline = require('node:readline')
const { spawn } = require('node:child_process')
const { useZooKeeper, lockPath, waitFor } = require('./helpers.js')

const zk = useZooKeeper()
const childJs = path.join(__dirname, 'exit-child.js')

/** Well within the children's 30 s session timeout: only a close removes their nodes this soon. */
const GONE_WITHIN_MS = 5000

/** Starts exit-child.js; resolves once it is ready, with its process and how it will end. */
function start(hosts, p, how) {
  const proc = spawn(process.execPath, [childJs, hosts, p, how], { stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  proc.stderr.on('data', (d) => {
    stderr += d
  })
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal, stderr })))
  const ready = new Promise((resolve, reject) => {
    readline.createInterface({ input: proc.stdout }).once('line', (l) => resolve(JSON.parse(l)))
    exited.then((r) => reject(new Error(`exit-child.js ended before it was ready: ${JSON.stringify(r)}`)))
  })
  return { proc, ready, exited }
}

for (const how of ['exit', 'end']) {
  const what = how === 'exit' ? 'process.exit()' : 'the natural end of the main thread'
  const nodes = how === 'exit' ? 'the held and the queued node go' : 'the held node goes'
  test(`${what} closes the sessions: ${nodes} at once`, async () => {
    const watcher = await zk.client()
    const p = lockPath(`exit-${how}`)
    const child = start(zk.connect, p, how)
    const { sessions } = await child.ready
    const r = await child.exited
    assert.equal(r.code, 0, r.stderr)
    const left = async () => (await watcher.participants(p)).filter((n) => sessions.includes(String(n.sessionId)))
    await waitFor(async () => (await left()).length === 0, GONE_WITHIN_MS, `the nodes of the exited process to go`)
  })
}

test('an uncaught exception that ends the process closes the sessions too', async () => {
  const watcher = await zk.client()
  const p = lockPath('exit-throw')
  const child = start(zk.connect, p, 'throw')
  const { sessions } = await child.ready
  const r = await child.exited
  assert.equal(r.code, 1, r.stderr)
  assert.match(r.stderr, /an uncaught exception/)
  const left = async () => (await watcher.participants(p)).filter((n) => sessions.includes(String(n.sessionId)))
  await waitFor(async () => (await left()).length === 0, GONE_WITHIN_MS, `the nodes of the crashed process to go`)
})

test("an exception caught by an 'uncaughtException' listener closes nothing", async () => {
  const p = lockPath('exit-caught')
  const child = start(zk.connect, p, 'caught')
  await child.ready
  const state = await new Promise((resolve) =>
    readline.createInterface({ input: child.proc.stdout }).once('line', (l) => resolve(JSON.parse(l).state)),
  )
  assert.equal(state, 'HELD')
  const r = await child.exited
  assert.equal(r.code, 0, r.stderr)
})

test('process.exit() with the server cut off ends promptly', async () => {
  const p = lockPath('exit-cut-off')
  const child = start(zk.proxiedConnect, p, 'stdin')
  await child.ready
  await zk.harness.command('blackhole')
  try {
    const t0 = Date.now()
    child.proc.stdin.write('exit\n')
    const r = await child.exited
    const took = Date.now() - t0
    assert.equal(r.code, 0, r.stderr)
    // The close waits at most 1 s; 10 s is far below the 30 s operation
    // timeout a close without that bound would wait.
    assert.ok(took < 10000, `the exit took ${took} ms`)
  } finally {
    await zk.harness.command('heal')
  }
})
