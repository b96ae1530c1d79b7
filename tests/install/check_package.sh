#!/usr/bin/env bash
# Uses an installed rnnc as its users would, from the installed files only (docs/install.md):
#   check_package.sh PREFIX SOURCE_DIR WORK_DIR CACHE_DIR SILERO_MODEL
# PREFIX is a `cmake --install --prefix` directory or the usr/ of an unpacked .deb. Checks:
# the rnnc command runs; include/ holds the public headers only; examples/streaming_speech
# builds as its own CMake project with find_package(rnnc), both examples link librnnc.a through
# the package's static component (static_consumer/), examples/streaming_speech_c builds with
# `pkg-config --cflags --libs rnnc`, and each runs the demo model (printing its OK line); Debian's /usr/bin/python3, with
# only the installed module directory on its path, passes python_test.py.
set -euo pipefail
prefix=$(realpath "$1")
source=$(realpath "$2")
work=$3
cache=$4
silero=$5
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")
version=$(sed -n 's/^#define RNNC_VERSION_STRING "\(.*\)"$/\1/p' "$prefix/include/rnnc/version.h")

echo "== $prefix/bin/rnnc"
"$prefix/bin/rnnc" --version | head -1 | grep -x "rnnc $version.*"

echo "== public headers only"
headers=$(cd "$prefix/include" && find . -type f | sort | tr '\n' ' ')
if [[ "$headers" != "./rnnc/error.h ./rnnc/rnnc.h ./rnnc/rnnc_c.h ./rnnc/version.h " ]]; then
  echo "FAIL: $prefix/include holds $headers" >&2
  exit 1
fi

echo "== C++: examples/streaming_speech, find_package(rnnc)"
cmake -S "$source/examples/streaming_speech" -B "$work/streaming_speech" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/streaming_speech"
"$work/streaming_speech/streaming_speech" --cache-dir "$cache"

echo "== C++ and C with librnnc.a: find_package(rnnc COMPONENTS static)"
cmake -S "$here/static_consumer" -B "$work/static" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DRNNC_SOURCE_DIR="$source" >"$work/configure_static.log" ||
  { cat "$work/configure_static.log"; exit 1; }
cmake --build "$work/static"
if readelf -d "$work/static/streaming_speech_c_static" | grep -q 'librnnc\.so'; then
  echo "FAIL: the static build links librnnc.so" >&2
  exit 1
fi
"$work/static/streaming_speech_static" --cache-dir "$cache" | tail -1
"$work/static/streaming_speech_c_static" --cache-dir "$cache" | tail -1

# pkg-config and the dynamic linker see the prefix and the system's own directories only.
export PKG_CONFIG_LIBDIR="$prefix/lib/pkgconfig"
export LD_LIBRARY_PATH="$prefix/lib"

echo "== C: examples/streaming_speech_c, pkg-config --cflags --libs rnnc"
pkg-config --modversion rnnc | grep -x "$version"
# shellcheck disable=SC2046  # pkg-config's output is a list of flags
cc -std=c11 -O2 -Wall -Werror "-DRNNC_DEMO_MODEL=\"$source/models/demo/lstm_demo.onnx\"" \
  "$source/examples/streaming_speech_c/main.c" $(pkg-config --cflags --libs rnnc) -lm \
  -o "$work/streaming_speech_c"
"$work/streaming_speech_c" --cache-dir "$cache"

echo "== Python: /usr/bin/python3 with $prefix/lib/python3/dist-packages"
# shellcheck disable=SC2046
# (api_outputs runs under python_test.py's clean environment: it finds librnnc.so by its RUNPATH.)
c++ -std=c++17 -O2 "$here/api_outputs.cc" $(pkg-config --cflags --libs rnnc) \
  "-Wl,-rpath,$prefix/lib" -o "$work/api_outputs"
env -i PATH=/usr/bin:/bin HOME="$work" PYTHONPATH="$prefix/lib/python3/dist-packages" \
  /usr/bin/python3 -s "$here/python_test.py" --module-dir "$prefix/lib/python3/dist-packages" \
  --api-outputs "$work/api_outputs" --source "$source" --work "$work" --cache-dir "$cache" \
  --silero "$silero" --version "$version"
