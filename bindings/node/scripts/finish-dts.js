'use strict'
// Appends js-api.d.ts (the declarations of what index.js adds in
// JavaScript) to the index.d.ts that `napi build` generated from the Rust
// doc comments. Idempotent: an earlier appended part is replaced.
const fs = require('node:fs')
const path = require('node:path')

const dir = path.join(__dirname, '..')
const marker = '// ---- added by index.js (js-api.d.ts) ----'
const dtsPath = path.join(dir, 'index.d.ts')
let dts = fs.readFileSync(dtsPath, 'utf8')
const at = dts.indexOf(marker)
if (at >= 0) dts = dts.slice(0, at)
const extra = fs.readFileSync(path.join(dir, 'js-api.d.ts'), 'utf8')
fs.writeFileSync(dtsPath, dts.trimEnd() + '\n\n' + marker + '\n' + extra)
