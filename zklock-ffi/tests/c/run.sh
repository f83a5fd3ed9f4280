#!/usr/bin/env bash
# run.sh: the C test suite of libzklock (`make test-c`).
#
# Expects the debug build of zklock-ffi (target/debug/libzklock.{so,a}) and
# of the harness (target/debug/zkharness). Then:
#   1. the header compiles on its own as C11 and as C++ (-Wall -Wextra -Werror),
#      and the library exports exactly the functions it declares;
#   2. builds the tests, the example and the leader example against the
#      shared library and the example against the static library;
#   3. starts a private ZooKeeper with a TLS port and a SASL user (with-zk.sh --proxy --tls --sasl alice:pw-alice), runs both examples and
#      the tests under valgrind (VALGRIND="" runs them without).
# The last line is "c: N passed, M failed".
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$root"
CC="${CC:-cc}"
CXX="${CXX:-c++}"
out=target/c
here=zklock-ffi/tests/c
VALGRIND="${VALGRIND-valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite --num-callers=40 --suppressions=$here/valgrind.supp}"
CFLAGS_STRICT=(-std=c11 -Wall -Wextra -Werror -g)

mkdir -p "$out/lib"
# The library's SONAME is libzklock.so.0: give the build tree that name.
ln -sf ../../debug/libzklock.so "$out/lib/libzklock.so.0"
ln -sf libzklock.so.0 "$out/lib/libzklock.so"
libs=(-L"$out/lib" -lzklock -Wl,-rpath,"$root/$out/lib")

echo "c: header compiles alone as C11 and C++"
printf '#include <zklock.h>\nint main(void) { return zklock_version() == 0; }\n' >"$out/header_only.c"
"$CC" "${CFLAGS_STRICT[@]}" -pedantic -Iinclude -fsyntax-only "$out/header_only.c"
"$CXX" -std=c++11 -Wall -Wextra -Werror -pedantic -Iinclude -fsyntax-only -x c++ "$out/header_only.c"

echo "c: libzklock.so exports exactly the functions include/zklock.h declares"
declared="$(grep -E '^[A-Za-z_][A-Za-z0-9_ *]*[ *](zklock_[a-z0-9_]+)\(' include/zklock.h |
  sed -E 's/.*[ *](zklock_[a-z0-9_]+)\(.*/\1/' | sort -u)"
exported="$(nm -D --defined-only target/debug/libzklock.so | awk '{print $3}' | sort)"
if [ "$declared" != "$exported" ] || [ -z "$exported" ]; then
  echo "c: exported symbols differ from the header's functions:" >&2
  diff <(printf '%s\n' "$declared") <(printf '%s\n' "$exported") >&2 || true
  exit 1
fi

echo "c: building tests and example"
"$CC" "${CFLAGS_STRICT[@]}" -Iinclude "$here/test_zklock.c" -o "$out/test_zklock" "${libs[@]}" -lpthread
"$CC" "${CFLAGS_STRICT[@]}" -Iinclude zklock-ffi/examples/example.c -o "$out/example" "${libs[@]}"
"$CC" "${CFLAGS_STRICT[@]}" -Iinclude zklock-ffi/examples/leader.c -o "$out/leader" "${libs[@]}" -lpthread
# Run as a program by the test leader_example_takeover.
export ZKLOCK_TEST_LEADER_EXAMPLE="$root/$out/leader"
"$CC" "${CFLAGS_STRICT[@]}" -Iinclude zklock-ffi/examples/example.c -o "$out/example-static" \
  target/debug/libzklock.a -lgcc_s -lutil -lrt -lpthread -lm -ldl
if readelf -d "$out/example-static" | grep -q 'libzklock'; then
  echo "c: example-static depends on libzklock.so" >&2
  exit 1
fi

# Inside the ZooKeeper session.
if [ "${1:-}" != "--inside" ]; then
  exec "$here/with-zk.sh" --proxy --tls --sasl alice:pw-alice "$0" --inside "$@"
fi
shift

echo "c: example (shared library)"
"$out/example" "$ZKLOCK_TEST_CONNECT" /examples/shared
echo "c: example (static library)"
"$out/example-static" "$ZKLOCK_TEST_CONNECT" /examples/static

log="$out/test_zklock.out"
vglog="$out/valgrind.log"
rm -f "$vglog"
echo "c: tests${VALGRIND:+ under valgrind (log: $vglog)}"
set +e
if [ -n "$VALGRIND" ]; then
  $VALGRIND --log-file="$vglog" "$out/test_zklock" "$@" 2>&1 | tee "$log"
else
  "$out/test_zklock" "$@" 2>&1 | tee "$log"
fi
rc=${PIPESTATUS[0]}
set -e
# The binary prints "test_zklock: N passed, N failed"; this script's verdict
# (the one line the test summary counts) is "c: N passed, N failed".
summary="$(sed -n 's/^test_zklock: \([0-9]* passed, [0-9]* failed\)$/c: \1/p' "$log" | tail -n 1)"
if [ -n "$VALGRIND" ]; then
  errors="$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$vglog" | head -n 1)"
  definite="$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$vglog" | head -n 1)"
  echo "c: valgrind: ${errors:-?} errors, ${definite:-0} bytes definitely lost"
  if [ "${errors:-1}" != 0 ]; then
    grep -v '^==[0-9]*== *$' "$vglog" | head -n 200 >&2
  fi
fi
if [ "$rc" -ne 0 ] || [ -z "$summary" ]; then
  [ -n "$summary" ] || summary="c: 0 passed, 1 failed (the test binary did not finish, exit $rc)"
  case "$summary" in *" 0 failed") summary="${summary%0 failed}1 failed (valgrind: exit $rc)" ;; esac
fi
echo "$summary"
[ "$rc" -eq 0 ]
