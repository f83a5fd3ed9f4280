'use strict'
// The example programs of bindings/node/examples, run as programs.
const { test } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const readline = require('node:readline')
const { spawn } = require('node:child_process')
const { useZooKeeper, sleep, waitFor } = require('./helpers.js')

const zk = useZooKeeper()
const leaderJs = path.join(__dirname, '..', 'examples', 'leader.js')
const LEADER_LINE = /^instance (\S+) is leader \(token (\d+)\)$/

/** One running leader.js; its output lines are collected. */
class Instance {
  constructor(hosts, id, sessionMs) {
    this.id = id
    this.lines = []
    this.proc = spawn(process.execPath, [leaderJs, hosts, id, String(sessionMs)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    this.exited = new Promise((resolve) => this.proc.once('exit', (code, signal) => resolve({ code, signal })))
    readline.createInterface({ input: this.proc.stdout }).on('line', (l) => this.lines.push(l))
  }

  /** Tokens of the "is leader" lines, in order. */
  leaderships() {
    return this.lines
      .map((l) => LEADER_LINE.exec(l))
      .filter(Boolean)
      .map((m) => BigInt(m[2]))
  }

  printed(text) {
    return this.lines.includes(text)
  }

  /** SIGTERM (SIGKILL after 15 s); resolves with the exit code (null if killed). */
  async stop() {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGTERM')
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 15000)
    const { code } = await this.exited
    clearTimeout(timer)
    return code
  }
}

test('leader example: SIGKILL the leader, another takes over through session expiry', async () => {
  const sessionMs = 2000
  const instances = [0, 1, 2].map((i) => new Instance(zk.connect, `js-${i}`, sessionMs))
  try {
    const claims = (list) => list.flatMap((inst) => inst.leaderships().map((token) => ({ inst, token })))
    await waitFor(() => claims(instances).length > 0, 30000, 'a leader')
    const { inst: leader, token } = claims(instances)[0]
    await waitFor(
      () => leader.printed(`leader ${leader.id} polling tasks (token ${token})`),
      10000,
      'the leader to poll',
    )
    const others = instances.filter((i) => i !== leader)
    for (const o of others) await waitFor(() => o.printed(`instance ${o.id} waiting to lead`), 30000, 'waiting')
    await sleep(500)
    assert.equal(claims(instances).length, 1, 'exactly one leader among 3 instances')

    // SIGKILL: the leader cannot release; the takeover comes from session expiry.
    leader.proc.kill('SIGKILL')
    await leader.exited
    const killed = Date.now()
    // A liveness bound (session timeout + 10 s), not a speed check.
    await waitFor(() => claims(others).length > 0, sessionMs + 10000, 'a new leader')
    const { inst: next, token: nextToken } = claims(others)[0]
    console.log(
      `leader ${leader.id} (token ${token}) killed; ${next.id} took over after ${(Date.now() - killed) / 1000} s (token ${nextToken})`,
    )
    assert.ok(nextToken > token, `new token ${nextToken} above ${token}`)
    await waitFor(
      () => next.printed(`leader ${next.id} polling tasks (token ${nextToken})`),
      10000,
      'the new leader to poll',
    )
    await sleep(500)
    assert.equal(claims(others).length, 1, 'exactly one new leader')

    // SIGTERM: the survivors hand over or stop waiting, and exit 0.
    for (const o of others) {
      assert.equal(await o.stop(), 0, `${o.id} exit code`)
      assert.equal(o.lines.at(-1), `instance ${o.id} exiting`)
    }
  } finally {
    for (const inst of instances) await inst.stop()
  }
  const c = await zk.client()
  await waitFor(async () => (await c.participants('/examples/scheduler/leader')).length === 0, 15000, 'no node left')
})
