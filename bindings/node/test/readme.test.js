'use strict'
// The README's Node snippet (the first js block of "### Node"), run as
// written with `require('zklock')` resolving to this package, against a
// real server: only the connect string is the test server's. Node >= 18 is
// what package.json claims; this machine and CI run the Node that
// scripts/install-deps.sh installs (20). The js blocks of the npm
// package's own README (bindings/node/README.md) run the same way on that
// Node and on Node 18 and 22 where install-deps.sh put them
// (target/node-versions).
const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')
const { useZooKeeper } = require('./helpers.js')

const zk = useZooKeeper([])
const README = path.join(__dirname, '..', '..', '..', 'README.md')
const PACKAGE_README = path.join(__dirname, '..', 'README.md')
const NODE_VERSIONS = path.join(__dirname, '..', '..', '..', 'target', 'node-versions', 'node_modules')

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

/** The Node binaries to run the package README's blocks on: this one, and 18 and 22 if installed. */
function nodes() {
  const extra = ['node18', 'node22']
    .map((n) => path.join(NODE_VERSIONS, n, 'bin', 'node'))
    .filter((bin) => fs.existsSync(bin))
  return [process.execPath, ...extra]
}

test('the js blocks of bindings/node/README.md run as written on every Node the package claims', () => {
  const blocks = [...fs.readFileSync(PACKAGE_README, 'utf8').matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1])
  assert.ok(blocks.length > 0, 'the package README has js blocks')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zklock-package-readme-'))
  try {
    fs.mkdirSync(path.join(dir, 'node_modules'))
    fs.symlinkSync(path.join(__dirname, '..'), path.join(dir, 'node_modules', 'zklock'), 'dir')
    blocks.forEach((code, i) => {
      // `await using` is a syntax error before Node 24: prose only.
      assert.ok(!/\bawait using\b/.test(code), `block ${i} uses await using`)
      const file = path.join(dir, `block-${i}.js`)
      fs.writeFileSync(file, code.replaceAll("'127.0.0.1:2181'", JSON.stringify(zk.connect)))
      for (const node of nodes()) {
        const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim()
        const out = execFileSync(node, [file], { cwd: dir, encoding: 'utf8', timeout: 60_000 })
        assert.match(out, /^holding, fencing token \d+\n$/, `block ${i} on Node ${version}`)
      }
    })
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
