'use strict'
// The `prepack` script of bindings/node/package.json: refuses `npm pack`
// and `npm publish` in this directory, which would ship the debug addon
// built here (about 79 MB) and no LICENSE. The npm packages are made by
// `make node-package` (build-packages.sh): the main package without a
// binary, and one package per platform with its release-built addon. (The
// package is also `private`, so that `npm publish --ignore-scripts` is
// refused too, and its `files` name no addon.)
console.error(
  'zklock: do not pack or publish bindings/node itself (it would carry the debug addon and no LICENSE).\n' +
    'Run `make node-package` from the repository root: it writes the main package and one package\n' +
    'per platform (release-built addons) to target/node-packages (bindings/node/build-packages.sh).',
)
process.exit(1)
