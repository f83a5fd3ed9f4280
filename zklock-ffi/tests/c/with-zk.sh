#!/usr/bin/env bash
# with-zk.sh: runs a command against a private ZooKeeper started by the test
# harness (`zkharness serve`), then stops the server again.
#
#   with-zk.sh [--proxy] [--tls] [--sasl USER:PASSWORD] CMD [ARGS...]
#
# CMD sees these environment variables:
#   ZKLOCK_TEST_CONNECT          connect string of the server
#   ZKLOCK_TEST_PROXIED_CONNECT  the same through the harness's TCP proxy
#                                (only with --proxy; empty otherwise)
#   ZKLOCK_TEST_SECURE_CONNECT   the server's TLS port (only with --tls)
#   ZKLOCK_TEST_TLS_DIR          its certificates: ca.pem, client.pem, ...
#                                (only with --tls; see zkharness --tls)
#   ZKLOCK_TEST_HARNESS_IN       a FIFO: write harness commands to it, one per
#                                line (blackhole, heal, drop-connections, ...)
#   ZKLOCK_TEST_HARNESS_OUT      a file with the harness's JSON answers, one
#                                per line (line 1 is the start-up line)
#
# The exit status is CMD's. The harness is shut down on every exit path
# (normal end, failure, Ctrl-C/SIGTERM); if this script is killed with
# SIGKILL, the harness sees EOF on its stdin and shuts down by itself.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
harness="${ZKHARNESS:-$root/target/debug/zkharness}"
serve_args=(serve)
while true; do
  case "${1:-}" in
    --proxy | --tls) serve_args+=("$1"); shift ;;
    --sasl) serve_args+=("$1" "$2"); shift 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: $0 [--proxy] [--tls] [--sasl USER:PASSWORD] CMD [ARGS...]" >&2; exit 2; }
[ -x "$harness" ] || { echo "with-zk: $harness not found (cargo build -p zklock-harness)" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/zklock-c.XXXXXX")"
fifo="$work/harness.in"
out="$work/harness.out"
mkfifo "$fifo"
harness_pid=""

stop_harness() {
  [ -n "$harness_pid" ] || return 0
  if kill -0 "$harness_pid" 2>/dev/null; then
    { echo shutdown >&3; } 2>/dev/null || true
    exec 3>&- || true
    for _ in $(seq 1 300); do
      kill -0 "$harness_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -TERM "$harness_pid" 2>/dev/null || true
  fi
  wait "$harness_pid" 2>/dev/null || true
  harness_pid=""
}
cmd_pid=""
cleanup() {
  local rc=$?
  if [ -n "$cmd_pid" ]; then
    kill -TERM -- "-$cmd_pid" 2>/dev/null || kill -TERM "$cmd_pid" 2>/dev/null || true
    wait "$cmd_pid" 2>/dev/null || true
  fi
  stop_harness
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

"$harness" "${serve_args[@]}" <"$fifo" >"$out" 2>"$work/harness.err" &
harness_pid=$!
# Keep the FIFO open for writing (the harness stops at EOF on its stdin).
exec 3>"$fifo"

hello=""
for _ in $(seq 1 1800); do
  if [ -s "$out" ]; then
    hello="$(head -n 1 "$out")"
    case "$hello" in *'}') break ;; esac
  fi
  kill -0 "$harness_pid" 2>/dev/null || break
  sleep 0.1
done
case "$hello" in
  *'"ok":true'*) ;;
  *)
    echo "with-zk: the harness did not start: ${hello:-no output}" >&2
    cat "$work/harness.err" >&2 || true
    exit 1
    ;;
esac

json_field() { printf '%s' "$hello" | sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"; }
export ZKLOCK_TEST_CONNECT="$(json_field connect)"
export ZKLOCK_TEST_PROXIED_CONNECT="$(json_field proxied_connect)"
export ZKLOCK_TEST_SECURE_CONNECT="$(json_field secure_connect)"
export ZKLOCK_TEST_TLS_DIR="$(json_field tls_dir)"
export ZKLOCK_TEST_HARNESS_IN="$fifo"
export ZKLOCK_TEST_HARNESS_OUT="$out"
[ -n "$ZKLOCK_TEST_CONNECT" ] || { echo "with-zk: no connect string in: $hello" >&2; exit 1; }

# In the background so that a signal to this script is handled at once
# (bash runs traps only between foreground commands), and in a process group
# of its own so that cleanup can stop CMD with all its children. (A
# background job of a non-interactive shell is no group leader, so setsid
# does not fork: $! is the new group's id.)
set +e
setsid "$@" &
cmd_pid=$!
wait "$cmd_pid"
rc=$?
cmd_pid=""
set -e
exit "$rc"
