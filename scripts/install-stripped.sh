#!/usr/bin/env bash
# install-stripped.sh MODE SRC DEST: installs SRC as DEST without debug
# information, which goes to DIR/.debug/NAME.debug beside it (where gdb
# looks, through the .gnu_debuglink section added to DEST). Used by
# `make install` for libzklock.so and the zklock binary.
set -euo pipefail
mode="$1" src="$2" dest="$3"
debug_dir="$(dirname "$dest")/.debug"
debug="$debug_dir/$(basename "$dest").debug"
install -d "$debug_dir"
install -m "$mode" "$src" "$dest"
objcopy --only-keep-debug "$dest" "$debug"
chmod 644 "$debug"
strip --strip-debug --strip-unneeded "$dest"
# The link names the file only; run objcopy where it is so it can check it.
(cd "$debug_dir" && objcopy --add-gnu-debuglink="$(basename "$debug")" "$dest")
