'use strict'
// A worker (session timeout 30 s) that takes its lock, then starts
// `what` ('close': client.close(); 'downgrade': the write guard's
// downgrade()) without awaiting it and, `delay` ms later, says 'end' (the
// parent then terminates it). Used by processes.test.js: its nodes must go
// at once, not with the session's expiry.
const { workerData, parentPort } = require('node:worker_threads')
const { Client } = require('..')
;(async () => {
  const { hosts, path, what, delay } = workerData
  const c = await Client.connect({ hosts, sessionTimeoutMs: 30000 })
  const guard = what === 'downgrade' ? await c.readWriteLock(path).write.acquire() : await c.lock(path).acquire()
  globalThis.kept = guard
  if (what === 'downgrade') guard.downgrade().catch(() => {})
  else c.close().catch(() => {})
  if (delay === 0) parentPort.postMessage('end')
  else setTimeout(() => parentPort.postMessage('end'), delay)
})()
