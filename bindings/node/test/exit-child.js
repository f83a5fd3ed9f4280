'use strict'
// Child process of exit.test.js: holds a lock on PATH and, but for `end`,
// queues a second acquire behind it (each on a client of its own, 30 s
// sessions), prints its sessions once its nodes are there, then ends as
// HOW says, without releasing or closing anything:
//   exit    process.exit(0) at once
//   end     lets the main thread end (a pending acquire would keep it
//           running, as any pending Promise of Node's does)
//   stdin   process.exit(0) when a line comes on stdin (after the test
//           has cut the server off)
//   throw   an uncaught exception
//   caught  an exception caught by an 'uncaughtException' listener: the
//           process goes on holding; it prints the guard's state 500 ms
//           later and exits by process.exitCode
//   node HOSTS PATH HOW
const readline = require('node:readline')
const { Client } = require('..')

async function main() {
  const [hosts, path, how] = process.argv.slice(2)
  const options = { hosts, sessionTimeoutMs: 30000, operationTimeoutMs: 30000 }
  const holder = await Client.connect(options)
  const waiter = await Client.connect(options)
  const guard = await holder.lock(path).acquire({ timeoutMs: 10000 })
  // Queued behind the holder; never granted (its rejection at the exit is
  // nobody's business).
  const nodes = how === 'end' ? 1 : 2
  if (nodes === 2) {
    waiter
      .lock(path)
      .acquire()
      .catch(() => {})
  }
  while ((await holder.participants(path)).length < nodes) await new Promise((r) => setTimeout(r, 20))
  const sessions = [holder.sessionId(), waiter.sessionId()].map(String)
  // Kept referenced to the end, so that no finalizer closes anything first.
  globalThis.kept = { holder, waiter, guard }
  await new Promise((resolve) => process.stdout.write(`${JSON.stringify({ ready: true, sessions })}\n`, resolve))
  if (how === 'exit') process.exit(0)
  if (how === 'stdin') readline.createInterface({ input: process.stdin }).once('line', () => process.exit(0))
  if (how === 'caught') {
    process.once('uncaughtException', () => {
      setTimeout(async () => {
        process.stdout.write(`${JSON.stringify({ state: guard.state })}\n`)
        await guard.release()
        await holder.close()
        await waiter.close()
      }, 500)
    })
  }
  if (how === 'throw' || how === 'caught')
    setTimeout(() => {
      throw new Error('an uncaught exception')
    }, 0)
  // 'end': nothing more to do.
}
main().catch((e) => {
  console.error(e)
  process.exit(1)
})
