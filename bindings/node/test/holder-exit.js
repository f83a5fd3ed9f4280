'use strict'
// Child process: acquires the lock, prints its session id and node, then
// exits WITHOUT releasing or closing (as a crashed process would).
const { Client } = require('..')

async function main() {
  const [hosts, lockPath] = process.argv.slice(2)
  const client = await Client.connect({ hosts, sessionTimeoutMs: 2000 })
  const guard = await client.lock(lockPath).acquire({ timeoutMs: 10000 })
  process.stdout.write(JSON.stringify({ session: String(guard.sessionId), node: guard.nodePath }) + '\n', () =>
    process.exit(0),
  )
}
main().catch((e) => {
  console.error(e)
  process.exit(1)
})
