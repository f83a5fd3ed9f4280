'use strict'
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFile } = require('node:child_process')
const { Worker } = require('node:worker_threads')
const { useZooKeeper, lockPath, waitFor } = require('./helpers.js')
const { testBuild } = require('./test-build.js')

const zk = useZooKeeper()
const contender = path.join(__dirname, 'contender.js')

function inWorker(args) {
  return new Promise((resolve, reject) => {
    const w = new Worker(contender, { workerData: args })
    w.once('message', resolve)
    w.once('error', reject)
  })
}

function inChild(args) {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [contender, JSON.stringify(args)], (err, stdout, stderr) => {
      if (err) return reject(new Error(`contender ${args.id} failed: ${err.message}\n${stdout}${stderr}`))
      resolve(JSON.parse(stdout))
    })
  })
}

test('mutual exclusion between worker threads and child processes', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zklock-node-'))
  try {
    const p = lockPath('contention')
    const rounds = 8
    const base = { hosts: zk.connect, lockPath: p, rounds, dir }
    const results = await Promise.all([
      inWorker({ ...base, id: 'w1' }),
      inWorker({ ...base, id: 'w2' }),
      inWorker({ ...base, id: 'w3' }),
      inChild({ ...base, id: 'c1' }),
      inChild({ ...base, id: 'c2' }),
      inChild({ ...base, id: 'c3' }),
    ])
    for (const r of results) {
      assert.equal(r.error, undefined, r.error)
      assert.equal(r.overlaps, 0, `${r.id} found someone inside`)
    }
    const log = fs.readFileSync(path.join(dir, 'log'), 'utf8').trim().split('\n')
    assert.equal(log.length, 6 * rounds)
    const tokens = log.map((l) => BigInt(l.split(' ')[0]))
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i] > tokens[i - 1], 'fencing tokens grow in grant order')
    const c = await zk.client()
    assert.deepEqual(await c.participants(p), [])
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('a child that exits without releasing: its node goes with its session', async () => {
  const c = await zk.client()
  const p = lockPath('exit')
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, [path.join(__dirname, 'holder-exit.js'), zk.connect, p], (err, stdout, stderr) => {
      if (err) return reject(new Error(`${err.message}\n${stderr}`))
      resolve(JSON.parse(stdout))
    })
  })
  // Right after the exit the node may still be there (until the session
  // expires, or at once if the server saw the connection close).
  const before = await c.participants(p)
  assert.ok(before.length <= 1)
  if (before.length === 1) assert.equal(String(before[0].sessionId), out.session)
  await waitFor(async () => (await c.participants(p)).length === 0, 15000, 'the dead holder node to go')
  const g = await c.lock(p).acquire({ timeoutMs: 5000 })
  await g.release()
})

test('a held guard whose signal is in use does not keep Node running', async () => {
  const p = lockPath('signal-exit')
  const script = `
    const { Client } = require(${JSON.stringify(path.join(__dirname, '..'))})
    Client.connect({ hosts: process.argv[1] }).then(async (c) => {
      const g = await c.lock(process.argv[2]).acquire({ timeoutMs: 10000 })
      g.signal.addEventListener('abort', () => {})
      process.stdout.write('held\\n')
    })`
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', script, zk.connect, p], { timeout: 20000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`${err.message}\n${stderr}`))
      resolve(stdout)
    })
  })
  assert.equal(out, 'held\n')
})

test('terminating workers with acquires in flight does not take the process down', async () => {
  // Settling a Promise into a worker torn down meanwhile aborted Node
  // (SIGABRT in napi_call_threadsafe_function): an outside test.
  const script = path.join(__dirname, 'worker-teardown.js')
  const out = await new Promise((resolve, reject) => {
    execFile(process.execPath, [script, zk.connect, lockPath('teardown'), '20'], (err, stdout, stderr) => {
      if (err) return reject(new Error(`worker-teardown.js failed (${err.signal || err.code}):\n${stdout}${stderr}`))
      resolve(stdout)
    })
  })
  assert.match(out, /survived/)
})

test("a terminated worker's pending acquire leaves no node and no session", async () => {
  // Its acquire, waiting without a timeout, kept the worker's client,
  // session and queue node alive for the rest of the process (an outside
  // test): the environment's teardown now cancels it. The worker's session
  // timeout is 30 s, so only that can remove the node within the wait.
  const c = await zk.client()
  const p = lockPath('worker-pending')
  const holder = await c.lock(p).acquire()
  const w = new Worker(path.join(__dirname, 'worker-pending.js'), { workerData: { hosts: zk.connect, path: p } })
  await new Promise((resolve, reject) => {
    w.once('message', (m) => (m === 'queued' ? resolve() : reject(new Error(`worker: ${m}`))))
    w.once('error', reject)
  })
  await w.terminate()
  await waitFor(async () => (await c.participants(p)).length === 1, 10000, "the worker's queue node to go")
  await holder.release()
})

test('a guard whose object cannot be made is released, never leaked', async () => {
  // After worker.terminate() from another thread, JavaScript cannot run:
  // napi-rs then failed to make the guard's object and leaked the guard,
  // whose node and session stayed for the rest of the process (an outside
  // test terminated workers while their downgrade() was settled). A test
  // hook makes the object fail the same way. The client's session timeout
  // is 30 s, so only the guard's release can remove its node in the wait.
  const zklock = testBuild()
  const c = await zklock.Client.connect({ hosts: zk.connect, sessionTimeoutMs: 30000 })
  const other = await zk.client()
  try {
    const gone = async (...paths) => {
      for (const p of paths) if ((await other.participants(p)).length > 0) return false
      return true
    }
    const p = lockPath('unmade')
    zklock.__failNextObjects(1)
    await assert.rejects(c.lock(p).acquire({ timeoutMs: 5000 }), /cannot be made|construct/)
    await waitFor(() => gone(p), 5000, "the unmade guard's node to go")

    const rwPath = lockPath('unmade-rw')
    const rw = c.readWriteLock(rwPath)
    const w = await rw.write.acquire({ timeoutMs: 5000 })
    zklock.__failNextObjects(1)
    await assert.rejects(w.downgrade(), /cannot be made|construct/)
    await w.release()
    await waitFor(() => gone(rwPath), 5000, "the unmade read guard's node to go")

    const [a, b] = [lockPath('unmade-a'), lockPath('unmade-b')]
    zklock.__failNextObjects(1)
    await assert.rejects(
      c.multiLock([{ path: a }, { path: b }]).acquire({ timeoutMs: 5000 }),
      /cannot be made|construct/,
    )
    await waitFor(() => gone(a, b), 5000, "the unmade multi-guard's nodes to go")

    // The next object is made as usual.
    const g = await c.lock(p).acquire({ timeoutMs: 5000 })
    await g.release()
  } finally {
    zklock.__failNextObjects(0)
    await c.close()
  }
})

test('a worker ended while its close() or downgrade() is on its way leaves no node', async () => {
  // Its nodes stayed for the whole session timeout: the client, dropped at
  // the teardown, stopped its runtime before the session's close went out
  // (an outside test: 2 to 7 of 20 workers). The session timeout is 30 s,
  // so only a clean close can remove the nodes within the wait.
  const c = await zk.client()
  for (const what of ['close', 'downgrade']) {
    const base = lockPath(`worker-ending-${what}`)
    const paths = Array.from({ length: 20 }, (_, i) => `${base}/${i}`)
    await Promise.all(
      paths.map(
        (p, i) =>
          new Promise((resolve, reject) => {
            const w = new Worker(path.join(__dirname, 'worker-ending.js'), {
              workerData: { hosts: zk.connect, path: p, what, delay: i % 4 },
            })
            w.once('message', () => w.terminate())
            w.once('error', reject)
            w.once('exit', resolve)
          }),
      ),
    )
    const left = async () => (await Promise.all(paths.map((p) => c.participants(p)))).flat()
    await waitFor(async () => (await left()).length === 0, 10000, `the ${what} workers' nodes to go`)
  }
})
