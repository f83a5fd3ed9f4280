'use strict'
// Issue 14, hostile input and misuse: every public entry point, given a bad
// value or called at the wrong time, ends promptly with one typed error
// (ZkLockError with its code, or TypeError for a value of the wrong type),
// and the process survives. The table is in hostile-cases.js.
const { test, describe } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { execFile } = require('node:child_process')
const fc = require('fast-check')
const { Client, ZkLockError, Lock, Guard } = require('..')
const { useZooKeeper } = require('./helpers.js')
const { groups, makeContext, run, describe: describeOutcome } = require('./hostile-cases.js')

const zk = useZooKeeper()
const table = groups()
const childJs = path.join(__dirname, 'hostile-child.js')

/** Runs `args` in hostile-child.js; its JSON lines and how it ended. */
function child(args) {
  return new Promise((resolve) => {
    execFile(process.execPath, [childJs, ...args], { timeout: 120_000, maxBuffer: 1 << 24 }, (err, stdout, stderr) => {
      const lines = stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
      resolve({ lines, code: err ? err.code : 0, signal: err ? err.signal : null, stderr })
    })
  })
}

// The cases with huge numbers, and panics, in child processes: a case that
// aborts the process is reported by name and the rest of the group runs in
// a new child.
for (const group of ['connectOptions', 'acquireTimeouts', 'panics']) {
  test(`in child processes, no case of ${group} aborts or fails`, async () => {
    const cases = table[group]
    const failures = []
    let first = 0
    while (first < cases.length) {
      const r = await child([zk.connect, group, String(first)])
      for (const l of r.lines) if ('i' in l && l.failure) failures.push(`${cases[l.i].name}: ${l.failure}`)
      if (r.lines.some((l) => l.done)) break
      const started = r.lines.filter((l) => 'start' in l).map((l) => l.start)
      const at = started.length ? started[started.length - 1] : first
      const tail = r.stderr
        .split('\n')
        .filter((l) => /panicked|fatal|Abort/.test(l))
        .slice(0, 2)
        .join(' | ')
      failures.push(`${cases[at].name}: the process died (exit code ${r.code}, signal ${r.signal}) ${tail}`)
      first = at + 1
    }
    assert.deepEqual(failures, [])
  })
}

test('in a child process, an onStateChange callback that throws is an uncaught exception, not an abort', async () => {
  const r = await child([zk.connect, 'throwing-callback'])
  assert.equal(r.signal, null, r.stderr)
  assert.equal(r.code, 0, r.stderr)
  assert.deepEqual(r.lines, [{ caught: ['callback threw on RELEASED'] }])
})

// The whole table in this process, with one context made on first use (the
// server is started by a before() hook of helpers.js).
let ctxPromise
const getCtx = () => (ctxPromise ??= makeContext(zk.connect, zk.client))

for (const [group, cases] of Object.entries(table)) {
  describe(group, () => {
    for (const c of cases) {
      test(c.name, async () => {
        const r = await run(c, await getCtx())
        assert.equal(r.failure, null)
      })
    }
  })
}

// Generated values: the same rules, for numbers and strings nobody listed.

/** The outcome of `call(ctx)`, a synchronous call or Promise, bounded like the table's. */
const settle = async (call) => run({ call }, await getCtx())

const specials = fc.constantFrom(
  NaN,
  Infinity,
  -Infinity,
  0,
  -0,
  Number.MAX_VALUE,
  -Number.MAX_VALUE,
  Number.MIN_VALUE,
  -Number.MIN_VALUE,
  1e12,
  1e12 + 1,
)
const anyNumber = fc.oneof(fc.double(), fc.integer(), specials)

test('generated acquire timeouts: NaN or negative is INVALID_ARGUMENT, anything else is accepted', async () => {
  // A closed client's lock: accepted values end at once with CLOSED.
  await fc.assert(
    fc.asyncProperty(anyNumber, async (ms) => {
      const r = await settle((ctx) => ctx.closed.lock.acquire({ timeoutMs: ms }))
      const want = Number.isNaN(ms) || ms < 0 ? 'INVALID_ARGUMENT' : 'CLOSED'
      assert.ok(
        r.error instanceof ZkLockError && r.error.code === want,
        `timeoutMs ${ms}: want ${want}, got ${describeOutcome(r)}`,
      )
    }),
    { numRuns: 500 },
  )
})

test('generated connect timeouts: outside (0, max] is INVALID_ARGUMENT naming the option', async () => {
  const maxMs = { sessionTimeoutMs: 3_600_000, connectTimeoutMs: 86_400_000, operationTimeoutMs: 86_400_000 }
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...Object.keys(maxMs)), anyNumber, async (option, ms) => {
      // An empty connect string: accepted options go on to fail on it
      // (INVALID_ARGUMENT too, but about the connect string), without a network.
      const r = await settle(() => Client.connect({ hosts: '', [option]: ms }))
      assert.ok(
        r.error instanceof ZkLockError && r.error.code === 'INVALID_ARGUMENT',
        `${option} ${ms}: ${describeOutcome(r)}`,
      )
      const namesOption = r.error.message.includes(option)
      // Any positive number is accepted (below half a nanosecond: 1 ns);
      // near the maximum, rounding to nanoseconds decides.
      const clearlyBad = !(ms > 0) || !Number.isFinite(ms) || ms > maxMs[option] * (1 + 1e-9)
      const clearlyGood = ms > 0 && ms < maxMs[option] * (1 - 1e-9)
      if (clearlyBad) assert.ok(namesOption, `${option} ${ms} must be refused: ${r.error.message}`)
      if (clearlyGood) assert.ok(!namesOption, `${option} ${ms} must be accepted: ${r.error.message}`)
    }),
    { numRuns: 500 },
  )
})

/** Strings of `unit`s: raw, absolute, or absolute with several components. */
const pathsOf = (unit) => {
  const s = fc.string({ unit, maxLength: 8 })
  return fc.oneof(
    s,
    s.map((x) => '/' + x),
    fc.array(s, { minLength: 1, maxLength: 4 }).map((xs) => '/' + xs.join('/')),
  )
}

/** The property: a path is INVALID_PATH at once, or ZooKeeper takes it too. */
async function pathProperty(paths) {
  const ctx = await getCtx()
  const client = await ctx.isolatedClient()
  await fc.assert(
    fc.asyncProperty(paths, async (p) => {
      let lock
      try {
        lock = client.lock(p)
      } catch (e) {
        assert.ok(e instanceof ZkLockError && e.code === 'INVALID_PATH', `lock(${JSON.stringify(p)}): ${e}`)
        return
      }
      assert.ok(lock instanceof Lock && lock.path === p)
      const r = await settle(() => lock.acquire({ timeoutMs: 0 }))
      assert.ok(
        !('error' in r) && r.value instanceof Guard,
        `acquire on ${JSON.stringify(p)}, accepted by lock(): ${describeOutcome(r)}`,
      )
    }),
    { numRuns: 150 },
  )
}

const bmpChar = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c))

test('generated lock paths of BMP characters: INVALID_PATH at once, or a lock ZooKeeper accepts', async () => {
  await pathProperty(pathsOf(fc.oneof(bmpChar, fc.constantFrom('/', '.', 'a', '\0'))))
})

test('generated lock paths of any Unicode characters: INVALID_PATH at once, or a lock ZooKeeper accepts', async () => {
  await pathProperty(
    pathsOf(fc.oneof(fc.constantFrom('/', 'a'), fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }))),
  )
})
