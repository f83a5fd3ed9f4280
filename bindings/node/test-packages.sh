#!/usr/bin/env bash
# test-packages.sh: `make test-node-package`. Installs the npm tarballs of
# target/node-packages (`make node-package`), the main package and the
# linux-x64-gnu addon, into a fresh directory with no Rust toolchain on
# PATH and no package registry (npm --offline), then takes a lock through
# `require('zklock')` and through `import { Client } from 'zklock'` on a
# private ZooKeeper (zklock-ffi/tests/c/with-zk.sh). Also checks that the
# main package carries README, LICENSE and types but no binary, that each
# platform package carries its addon, that neither has the test hooks of
# the test build (`__panicForTest`...: the cargo feature `test-hooks`), and
# that a plain `npm pack` of bindings/node (the debug addon, no LICENSE) is
# refused.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$root/target/node-packages"
version="$(node -p "require('$root/bindings/node/package.json').version")"
main="$out/zklock-$version.tgz"

contents="$(tar -tzf "$main" | sed 's#^package/##' | sort | tr '\n' ' ')"
for f in README.md LICENSE index.js index.d.ts native.js package.json; do
  grep -qw "$f" <<<"$contents" || { echo "node package: $f missing from $main ($contents)" >&2; exit 1; }
done
if grep -q '\.node' <<<"$contents"; then
  echo "node package: the main package carries a binary: $contents" >&2
  exit 1
fi
for platform in linux-x64-gnu linux-x64-musl linux-arm64-gnu; do
  tar -tzf "$out/zklock-$platform-$version.tgz" | grep -q "package/zklock.$platform.node" \
    || { echo "node package: zklock-$platform has no addon" >&2; exit 1; }
  # The names napi registers the test hooks by, in the addon's strings.
  if tar -xzOf "$out/zklock-$platform-$version.tgz" "package/zklock.$platform.node" \
    | grep -a -o -E '_(panicForTest|failNextObjects|errorForKind)' | sort -u | grep .; then
    echo "node package: zklock-$platform has the test hooks above (built with the feature test-hooks)" >&2
    exit 1
  fi
done

# `npm pack` (and so `npm publish`) of bindings/node itself is refused by
# its prepack script, naming `make node-package`; with --ignore-scripts it
# still carries no addon (`files`), and the package is private.
pkg="$root/bindings/node"
if refusal="$(cd "$pkg" && npm pack --dry-run --json 2>&1)"; then
  echo "node package: a plain npm pack of bindings/node was not refused: $refusal" >&2
  exit 1
fi
grep -q 'make node-package' <<<"$refusal" \
  || { echo "node package: npm pack of bindings/node failed without saying why: $refusal" >&2; exit 1; }
listed="$(cd "$pkg" && npm pack --dry-run --json --ignore-scripts 2>/dev/null \
  | node -e 'for (const f of JSON.parse(require("fs").readFileSync(0))[0].files) console.log(f.path)')"
if grep -q '\.node$' <<<"$listed"; then
  echo "node package: npm pack --ignore-scripts of bindings/node carries an addon: $listed" >&2
  exit 1
fi
[ "$(node -p "require('$pkg/package.json').private")" = true ] \
  || { echo "node package: bindings/node/package.json is not private (npm publish --ignore-scripts)" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/zklock-npm.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# No cargo or rustc here: the packages must not need them.
clean_path="$(dirname "$(command -v node)"):/usr/bin:/bin"
if PATH="$clean_path" command -v cargo >/dev/null; then
  echo "node package: cargo is in $clean_path; cannot test without Rust" >&2
  exit 1
fi
cd "$work"
PATH="$clean_path" npm install --offline --no-audit --no-fund --silent "$main" "$out/zklock-linux-x64-gnu-$version.tgz"
if find node_modules/zklock -name '*.node' | grep -q .; then
  echo "node package: an addon inside node_modules/zklock" >&2
  exit 1
fi
cat >check.cjs <<'JS'
const zklock = require('zklock')
const { Client, ZkLockError } = zklock
const assert = require('node:assert/strict')
assert.ok(require.resolve('zklock-linux-x64-gnu').includes('node_modules/zklock-linux-x64-gnu/'))
// No test hook in the installed package: no `__` export, and no hook on
// any class of the addon.
assert.deepEqual(Object.getOwnPropertyNames(zklock).filter((k) => k.startsWith('__')), [])
const addon = require('zklock-linux-x64-gnu')
const statics = Object.values(addon)
  .filter((v) => typeof v === 'function')
  .flatMap((cls) => Object.getOwnPropertyNames(cls).map((k) => `${cls.name}.${k}`))
assert.deepEqual(statics.filter((k) => /ForTest|failNext|errorForKind/.test(k)), [])
;(async () => {
  const client = await Client.connect({ hosts: process.env.ZKLOCK_TEST_CONNECT })
  await client.withLock('/npm-test/job', async (guard) => console.log(`node package (require): token ${guard.fencingToken}`))
  // zklock/metrics loads without prom-client (an optional peer dependency,
  // not installed here) and says what is missing when it needs it.
  const { registerClient } = require('zklock/metrics')
  assert.throws(() => registerClient(client), /prom-client is not installed/)
  await assert.rejects(Client.connect({ hosts: '' }), ZkLockError)
  await client.close()
})()
JS
cat >check.mjs <<'JS'
import assert from 'node:assert/strict'
import zklock, { Client, ZkLockError } from 'zklock'
assert.equal(zklock.Client, Client)
const client = await Client.connect({ hosts: process.env.ZKLOCK_TEST_CONNECT })
await client.withLock('/npm-test/job', async (guard) => console.log(`node package (import): token ${guard.fencingToken}`))
await assert.rejects(Client.connect({ hosts: '' }), ZkLockError)
await client.close()
JS
PATH="$clean_path" "$root/zklock-ffi/tests/c/with-zk.sh" sh -c 'node check.cjs && node check.mjs'
echo "node packages: ok (zklock-$version.tgz and the linux-x64-gnu addon, installed without Rust or a registry)"
