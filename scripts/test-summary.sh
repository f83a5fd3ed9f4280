#!/usr/bin/env bash
# Prints one closing line with the totals of every `test result:` line that
# cargo wrote to the logs given as arguments: "tests: N passed, N failed".
set -euo pipefail
cat "$@" | awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed/) p += $(i-1); if ($(i) ~ /^failed/) f += $(i-1) } }
  END { printf "tests: %d passed, %d failed\n", p, f; exit (f > 0) }'
