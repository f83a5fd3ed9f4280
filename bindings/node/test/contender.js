'use strict'
// A lock contender, run as a worker thread (workerData) or a child process
// (argv: JSON). Each round: acquire, enter the "critical section" (create a
// marker file exclusively: it fails if someone else is inside), append the
// fencing token to a log, leave, release. Reports {id, rounds, overlaps}.
const fs = require('node:fs')
const path = require('node:path')
const { isMainThread, workerData, parentPort } = require('node:worker_threads')
const { Client } = require('..')

async function run({ hosts, lockPath, rounds, dir, id }) {
  const client = await Client.connect({ hosts })
  const lock = client.lock(lockPath)
  const marker = path.join(dir, 'inside')
  let overlaps = 0
  for (let i = 0; i < rounds; i++) {
    const guard = await lock.acquire({ timeoutMs: 60000 })
    guard.check()
    try {
      fs.writeFileSync(marker, id, { flag: 'wx' })
    } catch {
      overlaps += 1
    }
    fs.appendFileSync(path.join(dir, 'log'), `${guard.fencingToken} ${id}\n`)
    await new Promise((r) => setTimeout(r, 2))
    fs.rmSync(marker, { force: true })
    await guard.release()
  }
  await client.close()
  return { id, rounds, overlaps }
}

if (!isMainThread) {
  run(workerData).then(
    (r) => parentPort.postMessage(r),
    (e) => parentPort.postMessage({ error: String(e.stack || e) }),
  )
} else if (require.main === module) {
  run(JSON.parse(process.argv[2])).then(
    (r) => process.stdout.write(JSON.stringify(r) + '\n'),
    (e) => {
      process.stdout.write(JSON.stringify({ error: String(e.stack || e) }) + '\n')
      process.exitCode = 1
    },
  )
}
