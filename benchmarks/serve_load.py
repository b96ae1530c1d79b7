"""Load benchmark for `rnnc serve` over loopback (docs/serving.md, "Load benchmark"): starts the
server with batching off, then on, and drives each with N concurrent streaming clients
(benchmarks/serve_load_client.cc: one ModelStreamInfer stream per client, one sequence each, in
lockstep: a chunk is sent when the previous answer is in). Bounded: each client sends at most
--chunks chunks and stops after --max-seconds. Prints throughput (chunks/s), p50/p99 latency per
chunk, the mean batch and the errors per setting as a Markdown table; exits 1 on any error.

  /usr/bin/python3 benchmarks/serve_load.py --rnnc build/tools/rnnc \\
      --client build/benchmarks/serve_load_client --model build/models/lstm128_l4.onnx \\
      --model-options dim=seq=16,dim=batch=1 --input x --chunk-shape 16,1,128 --clients 32
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "serve"))
import serve_client as sc  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--rnnc", required=True)
parser.add_argument("--client", required=True, help="build/benchmarks/serve_load_client")
parser.add_argument("--model", required=True)
parser.add_argument("--model-options", default="", help="appended to --model NAME=PATH")
parser.add_argument("--input", required=True, help="the model input the chunks feed")
parser.add_argument("--chunk-shape", required=True, help="e.g. 16,1,128")
parser.add_argument("--clients", type=int, default=32)
parser.add_argument("--chunks", type=int, default=200, help="per client, at most")
parser.add_argument("--max-seconds", type=float, default=20, help="per setting, at most")
parser.add_argument("--threads", type=int, default=2, help="rnnc serve --threads")
parser.add_argument("--max-batch", type=int, default=32)
parser.add_argument("--max-wait-us", type=int, default=1000)
parser.add_argument("--cache-dir", default="")
args = parser.parse_args()


def run(batching):
    options = f"model={args.model}" + (f",{args.model_options}" if args.model_options else "")
    if batching:
        options += f",batching=on,max-batch={args.max_batch},max-wait-us={args.max_wait_us}"
    server_args = ["--model", options, "--threads", str(args.threads),
                   "--max-sequences", str(args.clients + 8), "--max-queue", str(4 * args.clients)]
    if args.cache_dir:
        server_args += ["--cache-dir", args.cache_dir]
    server = sc.Server(args.rnnc, server_args)
    try:
        client = subprocess.run(
            [args.client, "--grpc", server.grpc_address, "--model", "model", "--input", args.input,
             "--shape", args.chunk_shape, "--clients", str(args.clients), "--chunks",
             str(args.chunks), "--max-seconds", str(args.max_seconds)],
            capture_output=True, text=True, timeout=args.max_seconds + 120)
        fields = dict(f.split("=", 1) for f in client.stdout.split(" first_error=")[0].split())
        fields["first_error"] = client.stdout.split(" first_error=", 1)[-1].strip()
        _, _, metrics = sc.http("GET", server.url("/metrics"))
    finally:
        code = server.stop()
    runs = {l.split("{")[0]: float(l.split()[-1]) for l in metrics.decode().splitlines()
            if l.startswith(("rnnc_serve_batch_size_sum", "rnnc_serve_batch_size_count"))}
    mean_batch = runs.get("rnnc_serve_batch_size_sum", 0) / max(1, runs.get(
        "rnnc_serve_batch_size_count", 1))
    errors = int(fields["errors"]) + (client.returncode not in (0, 1)) + (code != 0)
    return {"batching": "on" if batching else "off", "chunks": int(fields["chunks"]),
            "seconds": float(fields["seconds"]), "throughput": float(fields["chunks_per_s"]),
            "p50": float(fields["p50_ms"]), "p99": float(fields["p99_ms"]), "errors": errors,
            "mean_batch": mean_batch, "first_error": fields["first_error"] + client.stderr}


rows = [run(False), run(True)]
print(f"{args.clients} streaming clients, {os.path.basename(args.model)} ({args.input} "
      f"[{args.chunk_shape}]), rnnc serve --threads {args.threads}, batching max-batch "
      f"{args.max_batch} max-wait-us {args.max_wait_us}")
print("| batching | chunks | s | chunks/s | p50 ms | p99 ms | mean batch | errors |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['batching']} | {r['chunks']} | {r['seconds']:.1f} | {r['throughput']:.0f} | "
          f"{r['p50']:.2f} | {r['p99']:.2f} | {r['mean_batch']:.1f} | {r['errors']} |")
for r in rows:
    if r["errors"]:
        print(f"batching {r['batching']}: first error: {r['first_error']}")
sys.exit(1 if any(r["errors"] for r in rows) else 0)
