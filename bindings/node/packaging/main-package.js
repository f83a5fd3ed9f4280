'use strict'
// Writes package.json of zklock's main npm package into DIR: the fields of
// bindings/node/package.json a user needs (no scripts, no dev
// dependencies; the optional peer dependency on prom-client), no addon in
// `files`, and the platform packages as optionalDependencies of the same
// version. Used by build-packages.sh.
// Usage: node main-package.js VERSION DIR PLATFORM-PACKAGE...
const fs = require('node:fs')
const path = require('node:path')

const [version, dir, ...platformPackages] = process.argv.slice(2)
const source = require('../package.json')
const manifest = {
  name: source.name,
  version,
  description: source.description,
  keywords: ['zookeeper', 'lock', 'distributed-lock', 'curator', 'leader-election', 'semaphore'],
  license: source.license,
  main: source.main,
  types: source.types,
  files: ['index.js', 'index.d.ts', 'native.js', 'metrics.js', 'metrics.d.ts', 'README.md', 'LICENSE'],
  engines: source.engines,
  // prom-client, for zklock/metrics only: npm does not install it unasked.
  peerDependencies: source.peerDependencies,
  peerDependenciesMeta: source.peerDependenciesMeta,
  optionalDependencies: Object.fromEntries(platformPackages.map((p) => [p, version])),
}
fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
