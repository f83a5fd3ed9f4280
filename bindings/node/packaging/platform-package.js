'use strict'
// Writes package.json and README.md of one platform package of zklock
// (napi-rs convention: the addon alone, installed by npm only where `os`,
// `cpu` and `libc` match). Used by build-packages.sh.
// Usage: node platform-package.js PLATFORM CPU LIBC VERSION DIR
const fs = require('node:fs')
const path = require('node:path')

const [platform, cpu, libc, version, dir] = process.argv.slice(2)
const main = require('../package.json')
const name = `zklock-${platform}`
const addon = `zklock.${platform}.node`
const manifest = {
  name,
  version,
  description: `The ${platform} native addon of zklock (installed by npm with the zklock package)`,
  license: main.license,
  os: ['linux'],
  cpu: [cpu],
  libc: [libc],
  main: addon,
  files: [addon, 'LICENSE', 'README.md'],
  engines: main.engines,
}
fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`)
fs.writeFileSync(
  path.join(dir, 'README.md'),
  `# ${name}\n\nThe native addon of [zklock](https://www.npmjs.com/package/zklock) for ${platform}. ` +
    'Do not install it yourself: `npm install zklock` installs it where it fits.\n',
)
