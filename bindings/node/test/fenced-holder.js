'use strict'
// Child process of fenced.test.js (the paused holder): acquires the lock,
// prints its node, checks (OK), stops itself (SIGSTOP) right before its
// fenced write, and makes the write as soon as it runs again; prints the
// outcome as JSON.
const { Client } = require('..')

async function main() {
  const [hosts, lockPath, state] = process.argv.slice(2)
  const client = await Client.connect({ hosts, sessionTimeoutMs: 2000 })
  const guard = await client.lock(lockPath).acquire({ timeoutMs: 30000 })
  console.log(JSON.stringify({ node: guard.nodePath, session: String(guard.sessionId) }))
  guard.check()
  console.log(JSON.stringify({ checked: true }))
  process.kill(process.pid, 'SIGSTOP')
  let outcome
  try {
    outcome = { written: await guard.fencedMulti([{ op: 'SET_DATA', path: state, data: 'stale holder' }]) }
  } catch (e) {
    outcome = { code: e.code, failedOp: e.failedOp ?? null, message: e.message }
  }
  process.stdout.write(JSON.stringify(outcome) + '\n', () => process.exit(0))
}
main().catch((e) => {
  console.error(e)
  process.exit(1)
})
