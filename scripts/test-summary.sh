#!/usr/bin/env bash
# Prints one closing line with the totals of every `test result:` line that
# cargo wrote, and every `<suite>: N passed, N failed` line other suites
# wrote, to the logs given as arguments: "tests: N passed, N failed".
set -euo pipefail
cat "$@" | awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed/) p += $(i-1); if ($(i) ~ /^failed/) f += $(i-1) } }
  /^[a-z]+: [0-9]+ passed, [0-9]+ failed/ { p += $2; f += $4 }
  END { printf "tests: %d passed, %d failed\n", p, f; exit (f > 0) }'
