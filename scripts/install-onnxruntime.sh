#!/usr/bin/env bash
# Installs ONNX Runtime's C/C++ API for the benchmark harness from two npm packages, since the
# npm registry is the only place here that ships it:
#   onnxruntime-node@1.30.0              -> package/bin/napi-v6/linux/x64/libonnxruntime.so.1
#                                           (the official Linux x64 build; it ships no headers)
#   com.github.asus4.onnxruntime@0.4.9   -> the C/C++ API headers (ORT_API_VERSION 29, which the
#                                           1.30.0 library serves through GetApi(29))
# Only those files are extracted, into PREFIX/{include,lib}; the tarballs stay in the cache.
# Idempotent and quiet when the prefix is already complete. Prints the prefix on stdout.
#   scripts/install-onnxruntime.sh [--quiet]    (--quiet: say nothing when already installed)
# Environment: RNNC_ORT_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/rnnc/onnxruntime: shared by
# every checkout on the machine, so a fresh clone does not download again).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
version=1.30.0
headers_pkg=com.github.asus4.onnxruntime@0.4.9
library_pkg=onnxruntime-node@$version
headers_dir="package/Plugins/iOS~/onnxruntime.xcframework/ios-arm64_x86_64-simulator/onnxruntime.framework/Headers"
library_path="package/bin/napi-v6/linux/x64/libonnxruntime.so.1"
cache=${RNNC_ORT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rnnc/onnxruntime}
prefix=$cache/$version
quiet=0
[[ "${1:-}" == "--quiet" ]] && quiet=1
log() { echo "install-onnxruntime: $*" >&2; }

if [[ -f "$prefix/lib/libonnxruntime.so.1" && -f "$prefix/include/onnxruntime_cxx_api.h" ]]; then
  if [[ $quiet -eq 0 ]]; then log "already installed in $prefix"; fi
  echo "$prefix"
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  log "npm is missing: installing Debian's npm"
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
fi

mkdir -p "$cache/tarballs"
# npm pack names its output <name>-<version>.tgz; fetch each tarball once.
fetch() {
  local spec=$1 tarball=$2
  if [[ ! -s "$cache/tarballs/$tarball" ]]; then
    log "npm pack $spec (about 100-150 MB)"
    (cd "$cache/tarballs" && npm pack --silent "$spec" >/dev/null)
    if [[ ! -s "$cache/tarballs/$tarball" ]]; then
      echo "install-onnxruntime: npm pack $spec did not produce $cache/tarballs/$tarball" >&2
      exit 1
    fi
  fi
}
fetch "$library_pkg" "onnxruntime-node-$version.tgz"
fetch "$headers_pkg" "com.github.asus4.onnxruntime-0.4.9.tgz"

staging=$(mktemp -d "$cache/staging.XXXXXX")
trap 'rm -rf "$staging"' EXIT
tar -xzf "$cache/tarballs/onnxruntime-node-$version.tgz" -C "$staging" "$library_path"
tar -xzf "$cache/tarballs/com.github.asus4.onnxruntime-0.4.9.tgz" -C "$staging" \
  --wildcards "$headers_dir/*.h"

mkdir -p "$staging/prefix/include" "$staging/prefix/lib"
cp "$staging/$library_path" "$staging/prefix/lib/libonnxruntime.so.1"
ln -s libonnxruntime.so.1 "$staging/prefix/lib/libonnxruntime.so"
cp "$staging/$headers_dir"/*.h "$staging/prefix/include/"
for header in onnxruntime_c_api.h onnxruntime_cxx_api.h onnxruntime_cxx_inline.h; do
  if [[ ! -f "$staging/prefix/include/$header" ]]; then
    echo "install-onnxruntime: $headers_pkg has no $header under $headers_dir" >&2
    exit 1
  fi
done
# Swap the finished prefix in at once, so an interrupted run never leaves half a prefix.
rm -rf "$prefix"
mv "$staging/prefix" "$prefix"
log "installed ONNX Runtime $version (library) + API headers from $headers_pkg into $prefix"
echo "$prefix"
