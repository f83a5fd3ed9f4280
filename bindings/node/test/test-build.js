'use strict'
/**
 * The package as the test build makes it (`make node`, `npm run
 * build:test`: the cargo feature `test-hooks`), with its test hooks
 * (`__panicForTest`, `__failNextObjects`, `__errorForKind`). Throws, saying
 * so, for an addon built without them (`npm run build`, the published
 * packages).
 */
function testBuild() {
  const zklock = require('..')
  if (typeof zklock.__panicForTest !== 'function') {
    throw new Error('the addon has no test hooks: build it with `make node` (npm run build:test)')
  }
  return zklock
}

module.exports = { testBuild }
