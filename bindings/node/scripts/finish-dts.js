'use strict'
// Appends vocabulary.d.ts (the unions of the shared words, generated from
// the core's tables by `make vocabulary`) and js-api.d.ts (the declarations
// of what index.js adds in JavaScript) to the index.d.ts that `napi build` generated from the Rust
// doc comments. Idempotent: an earlier appended part is replaced. Also
// drops the blank line (of blanks) that napi writes for the test build's
// impl block of hooks (all skip_typescript), so that index.d.ts is the same
// with the cargo feature `test-hooks` (`npm run build:test`) and without.
const fs = require('node:fs')
const path = require('node:path')

const dir = path.join(__dirname, '..')
const marker = '// ---- the shared words (vocabulary.d.ts) and what index.js adds (js-api.d.ts) ----'
const dtsPath = path.join(dir, 'index.d.ts')
let dts = fs.readFileSync(dtsPath, 'utf8')
const at = dts.indexOf(marker)
if (at >= 0) dts = dts.slice(0, at)
dts = dts.replace(/^[ \t]+\n/gm, '')
const extra = ['vocabulary.d.ts', 'js-api.d.ts'].map((f) => fs.readFileSync(path.join(dir, f), 'utf8')).join('\n')
fs.writeFileSync(dtsPath, dts.trimEnd() + '\n\n' + marker + '\n' + extra)
