#!/usr/bin/env bash
# The capacity figures of docs/benchmarks.md's "Stream batcher" section for this CPU, in one
# command: how many real-time streams of speech_lstm4_h608 one machine serves with p99 chunk
# latency within a budget (`rnnc streams --find-max`) with batching off and on, int8, 2 threads
# and 2 concurrent runs; what one batched run costs per batch size at 1 and 2 threads; this
# core's FMA peak (rnnc_bench's machine bounds); and the chart of the sweeps.
#   scripts/streams.sh        about 30 minutes on 2 cores; run it on a quiet machine
# Writes OUT (default BUILD_DIR/streams-<cpu>): one find-max log per configuration, summary.md
# (the tables, naming the CPU, the date and the commands) and streams.png; then puts summary.md
# into docs/benchmarks.md between this CPU kind's "streams.sh" markers (a new CPU kind gets its
# own block at the end of the "Stream batcher" section; the text around the blocks is kept) and
# the chart into docs/streams-<cpu>.png. DOCS=0 skips the docs step.
# Environment: BUILD_DIR (default build, configured and built by scripts/test.sh or here),
# MODELS_DIR (default BUILD_DIR/models), TRIAL_SECONDS (simulated seconds per trial, default 6),
# TRIALS (trials per stream count, default 3: a count is judged by its median trial, so that one
# stall of a shared host does not decide the search), P99_MS (default 100), OUT.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
models=${MODELS_DIR:-$build/models}
seconds=${TRIAL_SECONDS:-6}
trials=${TRIALS:-3}
p99=${P99_MS:-100}
step() { echo "== streams.sh: $*" >&2; }

"$root/scripts/setup.sh" --python >/dev/null
if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
step "build rnnc and rnnc_bench"
cmake --build "$build" --target rnnc rnnc_bench >/dev/null
model=$models/speech_lstm4_h608.onnx
if [[ ! -f "$model" ]]; then
  step "generate the workloads into $models"
  /usr/bin/python3 "$root/models/make_workloads.py" --out "$models" >/dev/null
fi
rnnc=$build/tools/rnnc
# The CPU kind's title ("AMD EPYC (Zen 4)") and slug, as benchmarks/report.py names them.
kind=$(/usr/bin/python3 -c "import sys; sys.path.insert(0, sys.argv[1]); import report
print('\t'.join(report.cpu_kind(*report.host_cpu_fields())))" "$root/benchmarks")
cpu=${kind%%$'\t'*}
slug=${kind##*$'\t'}
out=${OUT:-$build/streams-$slug}
mkdir -p "$out"

step "this core's FMA peak (rnnc_bench's machine bounds, with its smallest workload briefly)"
"$build/benchmarks/rnnc_bench" --models="$models" --threads=1 --filter='^lstm128_l1$' --bounds \
  --budget=0.2 --rounds=1 --no-quant --json="$out/bounds.json" >/dev/null

# name | first stream count | options
configurations=(
  "off_1thread|16|--batching off"
  "on_1thread|16|--batching on"
  "on_int8_1thread|64|--batching on --quantize default"
  "off_2threads|32|--batching off --threads 2"
  "on_2threads|32|--batching on --threads 2"
  "on_2runs|32|--batching on --concurrent-runs 2"
)
for entry in "${configurations[@]}"; do
  IFS='|' read -r name first options <<<"$entry"
  step "find-max: $options"
  # shellcheck disable=SC2086
  "$rnnc" streams "$model" $options --seconds "$seconds" --trials "$trials" --find-max \
    --p99-ms "$p99" --streams "$first" >"$out/$name.txt"
  tail -1 "$out/$name.txt" >&2
done

step "one batched run per batch size"
: >"$out/batch_runs.txt"
for threads in 1 2; do
  for batch in 1 4 16 32 64; do
    line=$("$rnnc" run "$model" --random --dim seq=16 --dim batch="$batch" --threads "$threads" \
      --repeat 10 | grep -o 'median [0-9.]* us')
    echo "$threads $batch $line" >>"$out/batch_runs.txt"
  done
done

/usr/bin/python3 - "$out" "$cpu" "$seconds" "$p99" "$trials" <<'EOF'
import datetime, json, os, re, sys
out, cpu, seconds, p99, trials = sys.argv[1:6]
bounds = json.load(open(os.path.join(out, "bounds.json")))["machine_bounds"]["fma"]
peak = bounds["gflops_median"]
# speech_lstm4_h608: 4 layers, 4 gates x 608 units over 608 inputs and 608 hidden: 2 flops per
# multiply-add, 100 frames per second per stream at 10 ms frames.
flop_per_frame = 4 * 2 * 4 * 608 * (608 + 608)
gflops_per_stream = flop_per_frame * 100 / 1e9

def streams(name):
    last = open(os.path.join(out, name + ".txt")).read().strip().splitlines()[-1]
    return int(re.match(r"max streams with p99 <= [0-9.]+ ms: ([0-9]+)", last).group(1))

rows = [("`--batching off` (1 thread)", "off_1thread", "off_1thread", 1),
        ("`--batching on` (1 thread)", "on_1thread", "off_1thread", 1),
        ("`--batching on --quantize default` (int8, 1 thread)", "on_int8_1thread", "off_1thread", 1),
        ("`--batching off --threads 2`", "off_2threads", "off_2threads", 2),
        ("`--batching on --threads 2`", "on_2threads", "off_2threads", 2),
        ("`--batching on --concurrent-runs 2`", "on_2runs", "off_2threads", 2)]
date = datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC")
lines = [f"Measured {date} on \"{cpu}\" by `scripts/streams.sh` ({seconds} s per trial, "
         f"p99 <= {p99} ms in the median of {trials} trials per count). FMA peak of one core: "
         f"{peak:.1f} GFLOP/s median (best {bounds['gflops_best']:.1f}).", "",
         "| configuration | streams sustained | x batching off (same threads) | GFLOP/s sustained "
         "(% of the FMA peak of the cores used) | x one thread |", "|---|---|---|---|---|"]
float_on = streams("on_1thread")
for label, name, base, cores in rows:
    n = streams(name)
    gflops = n * gflops_per_stream
    share = "" if "int8" in name else f" ({100 * gflops / (peak * cores):.0f}%)"
    extra = f"{n / float_on:.2f}x float batched" if "int8" in name else (
        f"{n / float_on:.2f}x" if cores == 2 and "on" in name else "")
    lines.append(f"| {label} | {n} | {n / streams(base):.1f} | {gflops:.0f}{share} | {extra} |")
lines += ["", "| threads | batch | run (median) | per stream chunk | GFLOP/s (% of the cores' FMA peak) |",
          "|---|---|---|---|---|"]
for line in open(os.path.join(out, "batch_runs.txt")):
    threads, batch, _, us, _ = line.split()
    threads, batch, us = int(threads), int(batch), float(us)
    gflops = batch * 16 * flop_per_frame / (us * 1e3)
    lines.append(f"| {threads} | {batch} | {us / 1000:.2f} ms | {us / batch / 1000:.2f} ms | "
                 f"{gflops:.0f} ({100 * gflops / (peak * threads):.0f}%) |")
open(os.path.join(out, "summary.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
/usr/bin/python3 "$root/benchmarks/streams_chart.py" --out "$out/streams.png" --budget-ms "$p99" \
  --title "speech_lstm4_h608 streams, $cpu" \
  "batching off, 1 thread=$out/off_1thread.txt" "batching on, 1 thread=$out/on_1thread.txt" \
  "batching on, int8=$out/on_int8_1thread.txt" "batching on, 2 threads=$out/on_2threads.txt"
step "wrote $out/summary.md and $out/streams.png"

if [[ "${DOCS:-1}" != 0 ]]; then
  /usr/bin/python3 - "$root/docs/benchmarks.md" "$out/summary.md" "$cpu" "$slug" <<'EOF'
import sys
path, summary_path, cpu, slug = sys.argv[1:5]
text = open(path).read()
summary = open(summary_path).read().strip()
begin, end = f"<!-- streams.sh {slug} -->", f"<!-- streams.sh {slug} end -->"
if begin in text and end in text:
    head, rest = text.split(begin, 1)
    text = head + begin + "\n" + summary + "\n" + end + rest.split(end, 1)[1]
else:
    anchor = "### Batched recurrent kernels"
    if anchor not in text:
        sys.exit(f"streams.sh: no '{anchor}' heading in {path} to put this CPU's block before")
    block = (f"**{cpu}**, `scripts/streams.sh`; chart: [streams-{slug}.png](streams-{slug}.png).\n\n"
             f"{begin}\n{summary}\n{end}\n\n")
    text = text.replace(anchor, block + anchor, 1)
open(path, "w").write(text)
EOF
  cp "$out/streams.png" "$root/docs/streams-$slug.png"
  step "put the tables into docs/benchmarks.md and the chart into docs/streams-$slug.png"
fi
