#!/usr/bin/env bash
# Installs the Debian packages rnnc needs to build, test and package (the Python module, the
# .deb), and nothing else.
# Idempotent: packages already present are skipped, and `apt-get update` runs at most once.
#   scripts/setup.sh            build + test dependencies
#   scripts/setup.sh --python   also Debian's python3-torch / python3-onnx (model generators),
#                               matplotlib (benchmark chart) and OpenBLAS (a real BLAS for torch)
set -euo pipefail

packages=(
  g++ cmake ninja-build ccache pkg-config
  libhalide14-0-dev llvm-14-dev libtbb-dev
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-14 libclang-rt-14-dev llvm-14-tools
  espeak-ng sox
  pybind11-dev python3-dev python3-numpy dpkg-dev file
  libgrpc++-dev protobuf-compiler-grpc libcpp-httplib-dev nlohmann-json3-dev
  python3-grpcio python3-yaml
)
if [[ "${1:-}" == "--python" ]]; then
  packages+=(python3-torch python3-onnx python3-matplotlib libopenblas0-pthread)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Wait for another apt/dpkg run (unattended upgrades, a parallel build) instead of failing at once.
lock=(-o DPkg::Lock::Timeout=600)
$SUDO apt-get "${lock[@]}" update -qq
$SUDO apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}"
