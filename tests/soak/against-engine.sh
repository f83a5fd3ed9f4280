#!/bin/sh
# Runs this checkout's soak over another commit's engine: the self-test of a
# fault class against the engine from before its fix.
#
#   tests/soak/against-engine.sh COMMIT [zklock-soak options...]
#
# e.g. the issue 13 classes against the engine before their fix:
#   tests/soak/against-engine.sh c227ec0 --faults partition-member --duration 90s
#   tests/soak/against-engine.sh c227ec0 --faults stall-holder --duration 90s
# Both must end "soak: FAILED" with violations under their class.
#
# It makes a throwaway git worktree of HEAD in a temporary directory, puts
# COMMIT's zklock-core/src in place of the engine (the soak uses only the
# public API, which must still compile), builds the soak there with a target
# directory of its own (never share one between worktrees: cargo may take
# the other tree's binaries as fresh), runs it, and removes the worktree.
# The exit code is the soak's.
set -eu
[ $# -ge 1 ] || { echo "usage: $0 COMMIT [zklock-soak options...]" >&2; exit 64; }
commit=$1
shift
repo=$(git rev-parse --show-toplevel)
git -C "$repo" rev-parse --verify --quiet "$commit^{commit}" >/dev/null || { echo "$0: no commit $commit" >&2; exit 64; }
tree=$(mktemp -d "${TMPDIR:-/tmp}/zklock-against-XXXXXX")
cleanup() { git -C "$repo" worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"; }
trap cleanup EXIT INT TERM
git -C "$repo" worktree add --detach "$tree" HEAD >/dev/null
# The soak itself as it is in this checkout, committed or not.
cp -R "$repo/tests/soak/." "$tree/tests/soak/"
rm -rf "$tree/zklock-core/src"
git -C "$repo" archive "$commit" zklock-core/src | tar -x -C "$tree"
echo "against-engine: the soak of $(git -C "$repo" rev-parse --short HEAD) over the engine of $commit" >&2
(cd "$tree" && CARGO_TARGET_DIR="$tree/target" cargo build --release -p zklock-soak)
status=0
"$tree/target/release/zklock-soak" "$@" || status=$?
exit $status
