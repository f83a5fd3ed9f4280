'use strict'
// Runs cases of the hostile-input table (hostile-cases.js) in a process of
// its own, so that an abort shows up as a failed case in hostile.test.js.
//
//   node hostile-child.js HOSTS GROUP FIRST   runs cases FIRST.. of GROUP
//   node hostile-child.js HOSTS throwing-callback
//
// Prints one JSON line as each case starts ({"start": i}) and one with its
// result ({"i", "failure"}: null or why it failed), then {"done": true}.

const { groups, makeContext, run, freshPath } = require('./hostile-cases.js')
const { Client } = require('..')

const [hosts, group, first] = process.argv.slice(2)
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n')

/** An onStateChange callback that throws reaches 'uncaughtException' like
 * any other callback's error, and the process goes on. */
async function throwingCallback() {
  const caught = []
  process.on('uncaughtException', (e) => caught.push(e.message))
  const c = await Client.connect({ hosts })
  const g = await c.lock(freshPath('throwing-callback')).acquire()
  await g.release()
  // Registered when no longer HELD: called once soon with the state.
  g.onStateChange((state) => {
    throw new Error(`callback threw on ${state}`)
  })
  const end = Date.now() + 5000
  while (caught.length === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20))
  await c.close()
  out({ caught })
}

async function main() {
  if (group === 'throwing-callback') return throwingCallback()
  const cases = groups()[group]
  if (!cases) throw new Error(`no group ${group}`)
  const ctx = await makeContext(hosts)
  try {
    for (let i = Number(first); i < cases.length; i++) {
      out({ start: i })
      const r = await run(cases[i], ctx)
      out({ i, failure: r.failure })
    }
  } finally {
    await ctx.dispose()
  }
  out({ done: true })
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`hostile-child: ${e?.stack}\n`)
    process.exit(2)
  },
)
