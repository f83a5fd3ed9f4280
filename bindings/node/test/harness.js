'use strict'
// Starts the shared ZooKeeper test harness (`zkharness serve --proxy`) and
// talks to it over stdin/stdout: one JSON line per command.
const { spawn } = require('node:child_process')
const path = require('node:path')
const readline = require('node:readline')

const root = path.resolve(__dirname, '../../..')
const bin = process.env.ZKHARNESS || path.join(root, 'target/debug/zkharness')

class Harness {
  static async start(args = ['--proxy']) {
    const h = new Harness()
    h.proc = spawn(bin, ['serve', ...args], { stdio: ['pipe', 'pipe', 'inherit'] })
    h.lines = readline.createInterface({ input: h.proc.stdout })
    h.waiting = []
    h.lines.on('line', (line) => {
      const w = h.waiting.shift()
      if (w) w(line)
    })
    const first = JSON.parse(await h.next())
    if (!first.ok) throw new Error(`zkharness failed to start: ${first.error}`)
    h.connect = first.connect
    h.proxiedConnect = first.proxied_connect
    // With --tls: the TLS ports and the certificates' directory.
    h.secureConnect = first.secure_connect
    h.tlsDir = first.tls_dir
    return h
  }

  next() {
    return new Promise((resolve, reject) => {
      this.waiting.push(resolve)
      this.proc.once('exit', (code) => reject(new Error(`zkharness exited with ${code}`)))
    })
  }

  async command(cmd) {
    const reply = this.next()
    this.proc.stdin.write(cmd + '\n')
    const r = JSON.parse(await reply)
    if (!r.ok) throw new Error(`zkharness ${cmd}: ${r.error}`)
    return r
  }

  async shutdown() {
    if (!this.proc || this.proc.exitCode !== null) return
    const exited = new Promise((resolve) => this.proc.once('exit', resolve))
    try {
      this.proc.stdin.write('shutdown\n')
      this.proc.stdin.end()
    } catch {}
    await exited
  }
}

module.exports = { Harness }
