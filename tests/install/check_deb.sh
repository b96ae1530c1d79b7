#!/usr/bin/env bash
# Builds the Debian package from a built tree and unpacks it, without root and without touching
# the system (installing it with apt-get is a by-hand check: docs/install.md):
#   check_deb.sh BUILD_DIR WORK_DIR
# Checks: the package's Depends name the Debian libraries the binaries link (TBB, Halide,
# protobuf, ONNX, and gRPC and cpp-httplib for `rnnc serve`) and what compiling kernels needs (gcc, libc6-dev), plus python3 and
# python3-numpy; its file list holds no test program and no header but the four public ones.
# Leaves WORK_DIR/root/usr, the unpacked files, for check_package.sh.
set -euo pipefail
build=$(realpath "$1")
work=$2
rm -rf "$work"
mkdir -p "$work"
work=$(realpath "$work")

cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work" >"$work/cpack.log" ||
  { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/rnnc_*.deb)
echo "== $deb"

depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for package in gcc libc6-dev python3 python3-numpy 'libtbb[0-9]' 'libhalide14-0' 'libprotobuf[0-9]' \
               'libonnx[0-9]' 'libstdc\+\+6' 'libgrpc\+\+[0-9]' 'libcpp-httplib[0-9]'; do
  if ! grep -Eq "(^|, )$package" <<<"$depends"; then
    echo "FAIL: Depends lacks $package" >&2
    exit 1
  fi
done

dpkg-deb -c "$deb" | awk '{print $6}' >"$work/files.txt"
echo "$(wc -l <"$work/files.txt") entries"
headers=$(grep -E '\.(h|hpp|hh|inc|def)$' "$work/files.txt" | sort | tr '\n' ' ')
if [[ "$headers" != "./usr/include/rnnc/error.h ./usr/include/rnnc/rnnc.h ./usr/include/rnnc/rnnc_c.h ./usr/include/rnnc/version.h " ]]; then
  echo "FAIL: headers in the package: $headers" >&2
  exit 1
fi
if grep -Ei '(^|/)(tests?|.*_test|testing|gtest|conformance|benchmarks?)(/|$|\.)' "$work/files.txt"; then
  echo "FAIL: test files in the package (above)" >&2
  exit 1
fi
for file in ./usr/bin/rnnc ./usr/lib/librnnc.so.0 ./usr/lib/librnnc.a ./usr/lib/pkgconfig/rnnc.pc \
            ./usr/lib/cmake/rnnc/rnncConfig.cmake ./usr/lib/cmake/rnnc/rnncConfigVersion.cmake; do
  grep -qx -- "$file" "$work/files.txt" || { echo "FAIL: $file is not in the package" >&2; exit 1; }
done
grep -q '^./usr/lib/python3/dist-packages/rnnc\.cpython-.*\.so$' "$work/files.txt" ||
  { echo "FAIL: the Python module is not in the package" >&2; exit 1; }

dpkg-deb -x "$deb" "$work/root"
echo "unpacked into $work/root"
