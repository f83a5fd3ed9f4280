#!/usr/bin/env bash
# Prints one closing line with the totals of the test runs whose logs are
# given as arguments: "tests: N passed, N failed". It reads cargo's
# `test result:` lines, pytest's final `=== N passed, M failed in Xs ===`
# line, node --test's `# pass N` / `# fail N` lines, and the plain
# `<suite>: N passed, N failed` line of our other suites. Missing logs count
# as a failure.
set -euo pipefail
missing=0
for f in "$@"; do
  [ -f "$f" ] || { echo "test-summary: no log $f" >&2; missing=$((missing + 1)); }
done
cat "$@" 2>/dev/null | awk -v missing="$missing" '
  function count(line,   i, n) {
    n = split(line, w, /[ ,;]+/)
    for (i = 2; i <= n; i++) {
      if (w[i] ~ /^passed/ && w[i-1] ~ /^[0-9]+$/) p += w[i-1]
      if (w[i] ~ /^failed/ && w[i-1] ~ /^[0-9]+$/) f += w[i-1]
    }
  }
  /^test result:/ { count($0) }
  /^=+ .*[0-9]+ (passed|failed).* in [0-9.]+s/ { count($0) }
  /^# pass [0-9]+$/ { p += $3 }
  /^# fail [0-9]+$/ { f += $3 }
  /^[a-z]+: [0-9]+ passed, [0-9]+ failed/ { p += $2; f += $4 }
  END { f += missing; printf "tests: %d passed, %d failed\n", p, f; exit (f > 0) }'
