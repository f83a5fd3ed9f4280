'use strict'
// The README's Node snippet (the first js block of "### Node"), run as
// written with `require('zklock')` resolving to this package, against a
// real server: only the connect string is the test server's. Node >= 18 is
// what package.json claims; this machine and CI run the Node that
// scripts/install-deps.sh installs (20).
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { useZooKeeper } = require('./helpers.js')

const zk = useZooKeeper([])
const README = path.join(__dirname, '..', '..', '..', 'README.md')

/** The first ```js block after the "### Node" heading. */
function snippet() {
  const text = fs.readFileSync(README, 'utf8')
  const section = text.slice(text.indexOf('\n### Node\n'))
  const m = /```js\n([\s\S]*?)```/.exec(section)
  assert.ok(m, 'the README has a js block under ### Node')
  return m[1]
}

test('the README Node snippet runs as written', () => {
  const code = snippet()
  assert.ok(code.includes("require('zklock')"), 'it requires the package by name')
  assert.ok(code.includes("'127.0.0.1:2181'"), 'it names the default connect string')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zklock-readme-'))
  try {
    fs.mkdirSync(path.join(dir, 'node_modules'))
    fs.symlinkSync(path.join(__dirname, '..'), path.join(dir, 'node_modules', 'zklock'), 'dir')
    const file = path.join(dir, 'snippet.js')
    fs.writeFileSync(file, code.replace("'127.0.0.1:2181'", JSON.stringify(zk.connect)))
    const out = execFileSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', timeout: 60_000 })
    assert.match(out, /^holding, fencing token \d+\n$/)
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
