"""Load benchmark for `rnnc serve` over loopback (docs/serving.md, "Load benchmark"): N concurrent
streaming clients, each one sequence over ModelStreamInfer in lockstep (the next chunk is sent
when the previous answer is in), with batching off and on. Bounded: each client sends at most
--chunks chunks and stops after --max-seconds. Prints throughput (chunks/s), p50/p99 latency per
chunk and the error count per setting as a Markdown table; exits 1 on any error.

  /usr/bin/python3 benchmarks/serve_load.py --rnnc build/tools/rnnc \\
      --stubs build/tests/serve/stubs --model build/models/lstm128_l4.onnx \\
      --input x --chunk-shape 16,1,128 --clients 32 --chunks 200
"""
import argparse
import os
import queue
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "serve"))
import serve_client as sc  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--rnnc", required=True)
parser.add_argument("--stubs", required=True)
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

import grpc  # noqa: E402

pb2, pb2_grpc, _, _ = sc.import_stubs(args.stubs)
shape = [int(d) for d in args.chunk_shape.split(",")]
rng = np.random.default_rng(1)
chunk_bytes = [rng.standard_normal(shape).astype(np.float32) for _ in range(8)]


def client(stub, sequence_id, deadline, latencies, errors):
    requests = queue.Queue()

    def feed():
        while True:
            request = requests.get()
            if request is None:
                return
            yield request

    call = stub.ModelStreamInfer(feed())
    try:
        for k in range(args.chunks):
            if time.monotonic() > deadline:
                break
            request = sc.grpc_request(pb2, "model", {args.input: chunk_bytes[k % 8]},
                                      parameters={"sequence_id": sequence_id,
                                                  "sequence_start": k == 0})
            start = time.perf_counter()
            requests.put(request)
            response = next(call)
            latencies.append(time.perf_counter() - start)
            if response.error_message:
                errors.append(response.error_message)
    except grpc.RpcError as error:
        errors.append(str(error))
    finally:
        requests.put(None)
        call.cancel()


def run(batching):
    options = f"model={args.model}" + (f",{args.model_options}" if args.model_options else "")
    if batching:
        options += f",batching=on,max-batch={args.max_batch},max-wait-us={args.max_wait_us}"
    server_args = ["--model", options, "--threads", str(args.threads),
                   "--max-sequences", str(args.clients + 8)]
    if args.cache_dir:
        server_args += ["--cache-dir", args.cache_dir]
    server = sc.Server(args.rnnc, server_args)
    channel = grpc.insecure_channel(server.grpc_address)
    stub = pb2_grpc.GRPCInferenceServiceStub(channel)
    latencies, errors = [], []
    deadline = time.monotonic() + args.max_seconds
    threads = [threading.Thread(target=client, args=(stub, 1 + c, deadline, latencies, errors))
               for c in range(args.clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    status, _, metrics = sc.http("GET", server.url("/metrics"))
    batch_lines = [l for l in metrics.decode().splitlines()
                   if l.startswith("rnnc_serve_batch_size_sum") or
                   l.startswith("rnnc_serve_batch_size_count")]
    runs = {l.split("{")[0]: float(l.split()[-1]) for l in batch_lines}
    channel.close()
    code = server.stop()
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1e3
    mean_batch = runs.get("rnnc_serve_batch_size_sum", 0) / max(1, runs.get(
        "rnnc_serve_batch_size_count", 1))
    return {"batching": "on" if batching else "off", "chunks": len(latencies),
            "seconds": elapsed, "throughput": len(latencies) / elapsed, "p50": pick(0.5),
            "p99": pick(0.99), "errors": len(errors) + (code != 0), "mean_batch": mean_batch,
            "first_error": errors[0] if errors else ""}


rows = [run(False), run(True)]
print(f"{args.clients} streaming clients, {args.model} ({args.input} {shape}), "
      f"rnnc serve --threads {args.threads}")
print("| batching | chunks | s | chunks/s | p50 ms | p99 ms | mean batch | errors |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['batching']} | {r['chunks']} | {r['seconds']:.1f} | {r['throughput']:.0f} | "
          f"{r['p50']:.2f} | {r['p99']:.2f} | {r['mean_batch']:.1f} | {r['errors']} |")
for r in rows:
    if r["errors"]:
        print(f"batching {r['batching']}: first error: {r['first_error']}")
sys.exit(1 if any(r["errors"] for r in rows) else 0)
