'use strict'
// demo_worker.js - the Node worker of `make demo`.
//
// zklock-core/examples/demo.rs starts it next to the C, Python and Rust
// workers, all on one private ZooKeeper. It takes turns on an exclusive lock,
// then on a read/write lock, stands once in a leader election (leads, then
// resigns), and takes leases of a semaphore of 2, and prints one line per
// event on stdout for the demo to merge into a timeline:
//
//   READY lang=node pid=P phase=mutex|rw|election|semaphore t_ns=T     (then waits for a line on stdin)
//   HOLD lang=node lock=PATH mode=exclusive|read|write|leader|lease round=R token=N waited_ms=W t_ns=T
//   RELEASE lang=node lock=PATH mode=... round=R token=N t_ns=T
//   DONE lang=node t_ns=T
//
// t_ns is process.hrtime.bigint() (CLOCK_MONOTONIC, the same clock in every
// process of the machine). HOLD is printed after the acquire resolved,
// RELEASE before the release is sent.
//
// Run by hand from the repository, after `make node` (which builds the addon
// next to bindings/node/index.js):
//
//   node bindings/node/examples/demo_worker.js 127.0.0.1:2181 /demo/mutex /demo/rw 3 rrw /demo/leader /demo/pool
//
// Arguments: connect string, exclusive lock path, read/write lock path,
// rounds on the exclusive lock (and on the semaphore), one letter per round
// on the read/write lock (r = read, w = write), election path, semaphore
// path. Exit status 0 when every round went through.

// In your own project: require('zklock'). Here: the package of this repository.
const { Client } = require('..')
const readline = require('node:readline')

// How long each grant is held (the same in every demo worker), in ms.
const HOLD_MS = { exclusive: 150, read: 300, write: 150, leader: 150, lease: 300 }
// The semaphore's leases (the same in every demo worker).
const PERMITS = 2

const emit = (line) => process.stdout.write(`${line} t_ns=${process.hrtime.bigint()}\n`)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

async function main(argv) {
  if (argv.length !== 7) {
    console.error(
      'usage: demo_worker.js HOSTS MUTEX_PATH RW_PATH ROUNDS RW_MODES ELECTION_PATH SEMAPHORE_PATH (e.g. rrw)',
    )
    return 2
  }
  const [hosts, mutexPath, rwPath, rounds, rwModes, electionPath, semaphorePath] = argv
  // The demo's "go" lines, one per phase.
  const stdin = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]()
  const ready = async (phase) => {
    emit(`READY lang=node pid=${process.pid} phase=${phase}`)
    const { done } = await stdin.next()
    if (done) throw new Error(`stdin closed before the start of phase ${phase}`)
  }
  const oneRound = async (lock, lockPath, mode, round) => {
    const started = process.hrtime.bigint()
    const guard = await lock.acquire() // no deadline: the demo bounds the whole run
    const waitedMs = (process.hrtime.bigint() - started) / 1000000n
    const token = guard.fencingToken // a bigint
    emit(`HOLD lang=node lock=${lockPath} mode=${mode} round=${round} token=${token} waited_ms=${waitedMs}`)
    try {
      await sleep(HOLD_MS[mode]) // the "work"
      guard.check() // before acting on the work: is the lock still safely ours?
    } finally {
      emit(`RELEASE lang=node lock=${lockPath} mode=${mode} round=${round} token=${token}`)
      await guard.release()
    }
  }

  const client = await Client.connect({ hosts, sessionTimeoutMs: 10000 })
  try {
    const mutex = client.lock(mutexPath)
    const { read, write } = client.readWriteLock(rwPath)
    await ready('mutex')
    for (let r = 1; r <= Number(rounds); r++) await oneRound(mutex, mutexPath, 'exclusive', r)
    await ready('rw')
    let r = 0
    for (const letter of rwModes) {
      r += 1
      if (letter === 'w') await oneRound(write, rwPath, 'write', r)
      else await oneRound(read, rwPath, 'read', r)
    }
    await ready('election')
    await oneRound(client.election(electionPath, 'node'), electionPath, 'leader', 1) // leads once, then resigns
    await ready('semaphore')
    const pool = client.semaphore(semaphorePath, PERMITS)
    for (let r = 1; r <= Number(rounds); r++) await oneRound(pool, semaphorePath, 'lease', r)
  } finally {
    await client.close()
  }
  emit('DONE lang=node')
  return 0
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
    process.stdin.destroy()
  },
  (e) => {
    console.error(`node worker: ${e.stack || e}`)
    process.exitCode = 1
    process.stdin.destroy()
  },
)
