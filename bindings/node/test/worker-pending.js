'use strict'
// A worker that queues one acquire (no timeout) behind a lock held
// elsewhere, on a session with a long timeout, then says so and waits.
// Used by processes.test.js: terminated, its queue node must go at once.
const { workerData, parentPort } = require('node:worker_threads')
const { Client } = require('..')
;(async () => {
  const c = await Client.connect({ hosts: workerData.hosts, sessionTimeoutMs: 30000 })
  c.lock(workerData.path)
    .acquire()
    .then(
      () => parentPort.postMessage('granted'),
      () => {},
    )
  while ((await c.participants(workerData.path)).length < 2) await new Promise((r) => setTimeout(r, 20))
  parentPort.postMessage('queued')
})()
