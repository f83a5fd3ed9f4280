'use strict'
// Terminates worker threads while their acquires and releases are in
// flight, round after round; prints "survived" if the process lives
// through it. Run by processes.test.js: Promises settled after their
// worker's environment was torn down aborted the whole process (found by
// an outside test). Usage: node worker-teardown.js HOSTS LOCK_PATH ROUNDS
const { Worker, isMainThread, workerData, parentPort } = require('node:worker_threads')
const { Client } = require('..')

if (isMainThread) {
  const [hosts, lockPath, rounds] = process.argv.slice(2)
  const workers = 4
  ;(async () => {
    for (let round = 0; round < Number(rounds); round++) {
      await Promise.all(
        Array.from(
          { length: workers },
          (_, i) =>
            new Promise((resolve) => {
              const w = new Worker(__filename, { workerData: { hosts, lockPath } })
              // Spread the terminations over the acquires' lifetimes.
              w.once('message', () => setTimeout(() => w.terminate(), (round * 53 + i * 31) % 400))
              w.once('error', resolve)
              w.once('exit', resolve)
            }),
        ),
      )
    }
    console.log('survived')
  })()
} else {
  ;(async () => {
    const client = await Client.connect({ hosts: workerData.hosts })
    const lock = client.lock(workerData.lockPath)
    for (let i = 0; i < 50; i++) {
      lock
        .acquire()
        .then((g) => g.release())
        .catch(() => {})
    }
    parentPort.postMessage('queued')
  })()
}
