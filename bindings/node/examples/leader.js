'use strict'
// leader.js - a leader-style task with zklock: several scheduler nodes run
// this same program and join the election /examples/scheduler/leader
// (client.election, Curator LeaderLatch layout); the leader polls task
// status every 200 ms, the others wait in acquire. When the leader dies, its
// session expires and another instance takes over within the session
// timeout; when it stops cleanly (Ctrl-C, SIGTERM) it resigns and the next
// one takes over at once.
//
// Run from the repository after `make node` (which builds the addon next to
// bindings/node/index.js), in several terminals:
//
//   node bindings/node/examples/leader.js 127.0.0.1:2181 node-1 [SESSION_TIMEOUT_MS]
//
// It prints, one line each:
//
//   instance ID waiting to lead
//   instance ID is leader (token N)
//   leader ID polling tasks (token N)        every 200 ms while leading
//   instance ID stopped leading: REASON      lock lost or suspended
//   instance ID exiting
//
// The fencing token N grows with every change of leader: give it to whatever
// the leader writes to, so that a deposed leader that did not notice in time
// (paused, partitioned) is refused there.

// In your own project: require('zklock'). Here: the package of this repository.
const { Client, ZkLockError } = require('..')
const { setTimeout: sleep } = require('node:timers/promises')

const LEADER_PATH = '/examples/scheduler/leader'
const POLL_MS = 200

/** The leader's work; a real scheduler reads task states here and writes with the token. */
function pollTasks(id, token) {
  console.log(`leader ${id} polling tasks (token ${token})`)
}

/** Resolves after `ms`, or at once when `signal` aborts. */
const pause = (ms, signal) => sleep(ms, undefined, { signal }).catch(() => {})

async function main(argv) {
  if (argv.length < 2 || argv.length > 3) {
    console.error('usage: leader.js HOSTS ID [SESSION_TIMEOUT_MS]')
    return 2
  }
  const [hosts, id] = argv
  const sessionTimeoutMs = argv.length === 3 ? Number(argv[2]) : 10000
  // Ctrl-C and SIGTERM: stop waiting, or stop leading and hand over.
  const stop = new AbortController()
  process.once('SIGINT', () => stop.abort())
  process.once('SIGTERM', () => stop.abort())

  const client = await Client.connect({ hosts, sessionTimeoutMs })
  try {
    const lock = client.election(LEADER_PATH, `scheduler ${id}`)
    while (!stop.signal.aborted) {
      console.log(`instance ${id} waiting to lead`)
      let guard
      try {
        guard = await lock.acquire({ signal: stop.signal }) // until we lead (or abort)
      } catch (e) {
        if (!(e instanceof ZkLockError)) throw e
        if (e.code === 'CANCELLED') break
        console.error(`instance ${id}: acquire: ${e.message}`) // e.g. no connection
        await pause(1000, stop.signal)
        continue
      }
      const token = guard.fencingToken
      console.log(`instance ${id} is leader (token ${token})`)
      try {
        while (!stop.signal.aborted) {
          try {
            guard.check() // before each round of work: still safely the leader?
          } catch (e) {
            console.log(`instance ${id} stopped leading: ${e.code}`)
            break
          }
          pollTasks(id, token)
          // Wakes at once when we stop or leadership is lost.
          await pause(POLL_MS, AbortSignal.any([stop.signal, guard.signal]))
        }
      } finally {
        await guard.release().catch(() => {}) // hand over (a lost lock has nothing to hand over)
      }
    }
  } finally {
    await client.close()
  }
  console.log(`instance ${id} exiting`)
  return 0
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code
  },
  (e) => {
    console.error(e)
    process.exitCode = 1
  },
)
