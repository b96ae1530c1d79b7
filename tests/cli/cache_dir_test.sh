#!/usr/bin/env bash
# Where compiled kernels go without RNNC_CACHE_DIR (docs/install.md, "Kernel cache"): the cache
# directory systemd gives a service, and for a user without a home a private directory in
# $TMPDIR, which rnnc refuses once others may write to it (kernels are dlopen'ed from there).
#   cache_dir_test.sh RNNC MODEL WORK_DIR
set -euo pipefail
rnnc=$1 model=$2 work=$3
rm -rf "$work"
mkdir -p "$work/systemd" "$work/tmp"

run() {
  env -u RNNC_CACHE_DIR -u XDG_CACHE_HOME -u CACHE_DIRECTORY "$@" \
    "$rnnc" run "$model" --random --dim seq=5 --dim batch=1 >/dev/null
}

# A service with CacheDirectory=rnnc: $CACHE_DIRECTORY, no HOME.
run -u HOME CACHE_DIRECTORY="$work/systemd"
ls "$work/systemd"/rnnc_*.so >/dev/null || { echo "FAIL: no kernels in \$CACHE_DIRECTORY"; exit 1; }

# No home directory: $TMPDIR/rnnc-cache-<uid>, private to the user.
run HOME=/nonexistent TMPDIR="$work/tmp"
dir="$work/tmp/rnnc-cache-$(id -u)"
ls "$dir"/rnnc_*.so >/dev/null || { echo "FAIL: no kernels in $dir"; exit 1; }
[[ $(stat -c %a "$dir") == 700 ]] || { echo "FAIL: $dir has mode $(stat -c %a "$dir")"; exit 1; }

# The same directory, writable by others: refused, saying what to do.
chmod 777 "$dir"
if error=$(run HOME=/nonexistent TMPDIR="$work/tmp" 2>&1); then
  echo "FAIL: ran with a cache directory others may write to"
  exit 1
fi
expected="cache directory '$dir' belongs to another user or others may write to it; set RNNC_CACHE_DIR"
grep -qF "$expected" <<<"$error" || { echo "FAIL: expected '$expected', got: $error"; exit 1; }
echo "OK: \$CACHE_DIRECTORY, \$TMPDIR/rnnc-cache-<uid> (0700), refused when others may write"
