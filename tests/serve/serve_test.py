"""`rnnc serve` end to end (docs/serving.md): starts the server on 127.0.0.1 with free ports and
drives it over gRPC (stubs from serve/proto/grpc_service.proto) and HTTP. Results are compared
with the library's own, computed here through the rnnc Python module on the same models and
kernel cache: the demo LSTM and Silero VAD, 64 concurrent Silero sequences over ModelStreamInfer,
every bad input the server must survive, and a graceful SIGTERM with requests in flight."""
import argparse
import concurrent.futures
import os
import queue
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_client as sc

parser = argparse.ArgumentParser()
parser.add_argument("--rnnc", required=True)
parser.add_argument("--stubs", required=True)
parser.add_argument("--python-module", required=True)
parser.add_argument("--demo", required=True)
parser.add_argument("--silero", required=True)
parser.add_argument("--cache-dir", required=True)
args = parser.parse_args()

import grpc  # noqa: E402

pb2, pb2_grpc, health_pb2, health_pb2_grpc = sc.import_stubs(args.stubs)
sys.path.insert(0, args.python_module)
import rnnc  # noqa: E402

SILERO_OPTIONS = "fix=sr=16000,state=stateN:state,dim=batch=1,dim=sequence=512"
DEMO_OPTIONS = "dim=seq=4,dim=batch=1"
IDLE_TIMEOUT_MS = 1500
MAX_TENSOR_BYTES = 1 << 20
MAX_MESSAGE_BYTES = 4 << 20
rng = np.random.default_rng(28)

demo_reference = rnnc.InferenceSession(args.demo, cache_dir=args.cache_dir)
silero_reference = rnnc.InferenceSession(args.silero, fix={"sr": 16000}, cache_dir=args.cache_dir)


def silero_alone(chunks):
    """Silero's outputs chunk by chunk, one stream of the library (its own Session)."""
    stream = silero_reference.new_stream(state={"stateN": "state"})
    return [stream.run(None, {"input": chunk}) for chunk in chunks]


def wait_for_metric(server, line, seconds=30):
    """Polls /metrics until it has `line` (e.g. 'rnnc_serve_requests_in_flight 2'); bounded."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status, _, data = sc.http("GET", server.url("/metrics"))
        if status == 200 and line in data.decode().splitlines():
            return True
        time.sleep(0.01)
    return False


def check(name, condition, detail=""):
    if not condition:
        raise AssertionError(f"{name}: {detail}")
    print(f"ok: {name}", flush=True)


def expect_error(name, call, code, text):
    """`call` must fail with gRPC status `code` and a message containing `text`."""
    try:
        call()
    except grpc.RpcError as error:
        check(name, error.code() == code and text in error.details(),
              f"got {error.code()} '{error.details()}', want {code} containing '{text}'")
        return
    raise AssertionError(f"{name}: the call succeeded, want {code}")


def expect_http_error(name, status, body, want_status, text):
    message = body.decode(errors="replace") if isinstance(body, bytes) else str(body)
    check(name, status == want_status and text in message,
          f"got {status} {message!r}, want {want_status} containing {text!r}")


server = sc.Server(args.rnnc, [
    "--model", f"demo={args.demo},{DEMO_OPTIONS}",
    "--model", f"silero={args.silero},{SILERO_OPTIONS}",
    "--model", f"silero_batched={args.silero},{SILERO_OPTIONS},batching=on,max-batch=16,max-wait-us=2000",
    "--threads", "2", "--max-sequences", "100", "--max-queue", "1024",
    "--sequence-idle-timeout-ms", str(IDLE_TIMEOUT_MS), "--max-tensor-bytes", str(MAX_TENSOR_BYTES),
    "--max-message-bytes", str(MAX_MESSAGE_BYTES),
    "--cache-dir", args.cache_dir])
print(f"server ready in {server.ready_seconds:.3f} s at grpc={server.grpc_address} "
      f"http={server.http_address}", flush=True)
channel = grpc.insecure_channel(server.grpc_address)
stub = pb2_grpc.GRPCInferenceServiceStub(channel)
health = health_pb2_grpc.HealthStub(channel)

try:
    # ---- health, readiness and metadata -------------------------------------------------------
    check("ServerLive", stub.ServerLive(pb2.ServerLiveRequest()).live)
    check("ServerReady", stub.ServerReady(pb2.ServerReadyRequest()).ready)
    check("ModelReady", stub.ModelReady(pb2.ModelReadyRequest(name="silero")).ready)
    check("grpc.health.v1 SERVING",
          health.Check(health_pb2.HealthCheckRequest(service="")).status ==
          health_pb2.HealthCheckResponse.SERVING)
    for path in ["/v2/health/live", "/v2/health/ready", "/v2/models/demo/ready",
                 "/v2/models/demo/versions/1/ready"]:
        status, _, _ = sc.http("GET", server.url(path))
        check(f"GET {path}", status == 200, f"status {status}")
    metadata = stub.ServerMetadata(pb2.ServerMetadataRequest())
    check("ServerMetadata", metadata.name == "rnnc" and "sequence" in metadata.extensions and
          "binary_tensor_data" in metadata.extensions, str(metadata))
    status, server_json = sc.http_json("GET", server.url("/v2"))
    check("GET /v2", status == 200 and server_json["name"] == "rnnc" and
          "sequence" in server_json["extensions"], str(server_json))

    model = stub.ModelMetadata(pb2.ModelMetadataRequest(name="demo"))
    shapes = {t.name: (t.datatype, list(t.shape)) for t in model.inputs}
    check("ModelMetadata demo: symbolic dims are -1",
          shapes["features"] == ("FP32", [-1, -1, 40]) and
          [(t.name, t.datatype, list(t.shape)) for t in model.outputs][0] ==
          ("log_probs", "FP32", [-1, -1, 32]), str(model))
    status, silero_json = sc.http_json("GET", server.url("/v2/models/silero"))
    silero_inputs = {t["name"]: t["shape"] for t in silero_json["inputs"]}
    check("GET /v2/models/silero: -1 dims, sr compiled in",
          status == 200 and silero_inputs == {"input": [-1, -1], "state": [2, -1, 128]} and
          silero_json["properties"]["sequence_state"] == "stateN->state", str(silero_json))

    # ---- stateless inference: equal to the library --------------------------------------------
    features = rng.standard_normal((7, 2, 40)).astype(np.float32)
    want = demo_reference.run(None, {"features": features})[0]
    for raw in (True, False):
        response = stub.ModelInfer(sc.grpc_request(pb2, "demo", {"features": features}, raw=raw))
        got = sc.grpc_outputs(response)["log_probs"]
        check(f"ModelInfer demo ({'raw' if raw else 'typed'} contents) equals the library",
              np.array_equal(got, want), f"max diff {np.abs(got - want).max()}")
    for binary in (False, True):
        body, headers = sc.rest_infer_body({"features": features}, binary=binary,
                                           binary_outputs=binary)
        status, response_headers, data = sc.http("POST", server.url("/v2/models/demo/infer"),
                                                 body, headers)
        got = sc.rest_outputs(response_headers, data)["log_probs"] if status == 200 else None
        check(f"POST infer demo ({'binary' if binary else 'JSON'} data) equals the library",
              status == 200 and np.array_equal(got, want), f"status {status} {data[:200]!r}")

    chunk = rng.uniform(-0.5, 0.5, (1, 512)).astype(np.float32)
    want = silero_alone([chunk])[0]
    response = stub.ModelInfer(sc.grpc_request(pb2, "silero", {"input": chunk},
                                               outputs=["output"]))
    got = sc.grpc_outputs(response)
    check("ModelInfer silero (requested output only) equals the library",
          list(got) == ["output"] and np.array_equal(got["output"], want[0]), str(got))

    # ---- the stateless form: the client carries Silero's state itself -------------------------
    chunks = [rng.uniform(-0.5, 0.5, (1, 512)).astype(np.float32) for _ in range(4)]
    reference = silero_alone(chunks)
    state = np.zeros((2, 1, 128), np.float32)
    same = True
    for k, piece in enumerate(chunks):
        got = sc.grpc_outputs(stub.ModelInfer(
            sc.grpc_request(pb2, "silero", {"input": piece, "state": state})))
        same &= np.array_equal(got["output"], reference[k][0])
        state = got["stateN"]
    check("stateless Silero (state as input and output tensors) equals one stream", same)

    # ---- sequences: server-held state ---------------------------------------------------------
    demo_chunks = [rng.standard_normal((3, 1, 40)).astype(np.float32) for _ in range(3)]
    stream = demo_reference.new_stream()
    demo_want = [stream.run(None, {"features": c})[0] for c in demo_chunks]
    same = True
    for k, piece in enumerate(demo_chunks):
        parameters = {"sequence_id": "demo-seq", "sequence_start": k == 0,
                      "sequence_end": k == len(demo_chunks) - 1}
        body, headers = sc.rest_infer_body({"features": piece}, parameters=parameters)
        status, response_headers, data = sc.http("POST", server.url("/v2/models/demo/infer"),
                                                 body, headers)
        same &= status == 200 and np.array_equal(
            sc.rest_outputs(response_headers, data)["log_probs"], demo_want[k])
    check("REST sequence (string sequence_id) on the demo LSTM equals one stream", same)

    def silero_stream(sequence_id, chunks, cancel_after=None, model="silero", end=True):
        """One ModelStreamInfer call carrying a sequence (ended by its last chunk unless `end` is
        False); [outputs per chunk]."""
        requests = []
        for k, piece in enumerate(chunks):
            requests.append(sc.grpc_request(
                pb2, model, {"input": piece},
                parameters={"sequence_id": sequence_id, "sequence_start": k == 0,
                            "sequence_end": end and k == len(chunks) - 1}))
        results = []
        call = stub.ModelStreamInfer(iter(requests))
        for response in call:
            if response.error_message:
                raise AssertionError(f"sequence {sequence_id}: {response.error_message}")
            results.append(sc.grpc_outputs(response.infer_response))
            if cancel_after is not None and len(results) == cancel_after:
                call.cancel()
                break
        return results

    sequences = {1000 + s: [rng.uniform(-0.5, 0.5, (1, 512)).astype(np.float32)
                            for _ in range(6)] for s in range(64)}
    alone = {s: silero_alone(chunks) for s, chunks in sequences.items()}
    # Without batching, bit for bit. Batched runs take Silero's generic program, a Session the
    # one specialized for batch 1: they differ in the last bits (docs/runtime.md, "Results").
    for model, tolerance in (("silero", 0.0), ("silero_batched", 1e-4)):
        with concurrent.futures.ThreadPoolExecutor(64) as pool:
            served = dict(zip(sequences, pool.map(
                lambda s: silero_stream(s, sequences[s], model=model), sequences)))
        worst = max(max(np.abs(got["output"] - want[0]).max(),
                        np.abs(got["stateN"] - want[1]).max())
                    for s in sequences for got, want in zip(served[s], alone[s]))
        check(f"64 concurrent Silero sequences over ModelStreamInfer ({model}) each equal their "
              f"own Session (max diff {worst:.2e}, tolerance {tolerance})",
              worst <= tolerance and all(len(r) == 6 for r in served.values()))
    status, _, data = sc.http("GET", server.url("/metrics"))
    batched = [l for l in data.decode().splitlines()
               if l.startswith('rnnc_serve_batch_size_') and 'silero_batched' in l]
    sums = {l.split("{")[0]: float(l.split()[-1]) for l in batched if "_bucket" not in l}
    check("batching: chunks of different sequences shared runs",
          sums["rnnc_serve_batch_size_sum"] > sums["rnnc_serve_batch_size_count"] > 0, str(sums))

    # ---- bad input: a protocol error naming the problem; the server keeps serving -------------
    raw_call = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer",
                                   request_serializer=None, response_deserializer=None)
    try:
        raw_call(b"\x0a\xff\xff\xff\xff\x0f")
        raise AssertionError("malformed protobuf accepted")
    except grpc.RpcError as error:
        check("malformed protobuf: INVALID_ARGUMENT naming it",
              error.code() == grpc.StatusCode.INVALID_ARGUMENT and
              "not a ModelInferRequest protobuf message" in error.details(),
              f"{error.code()} {error.details()}")
    # A string field that is not UTF-8 (model_name = ff fe): INVALID_ARGUMENT each time, and
    # protobuf's complaint on the server's stderr once, not once per request.
    for _ in range(20):
        try:
            raw_call(b"\x0a\x02\xff\xfe")
            raise AssertionError("a non-UTF-8 model name accepted")
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.INVALID_ARGUMENT:
                raise AssertionError(f"non-UTF-8 model name: {error.code()} {error.details()}")
    time.sleep(0.2)
    protobuf_lines = [l for l in server.lines if "protobuf" in l]
    check("non-UTF-8 string fields: INVALID_ARGUMENT, one protobuf log line for 20 requests",
          len(protobuf_lines) == 1 and "invalid UTF-8" in protobuf_lines[0],
          "".join(protobuf_lines))
    stream_replies = list(channel.stream_stream(
        "/inference.GRPCInferenceService/ModelStreamInfer", request_serializer=None,
        response_deserializer=pb2.ModelStreamInferResponse.FromString)(
            iter([b"\x0a\xff\xff\xff\xff\x0f",
                  sc.grpc_request(pb2, "demo", {"features": features}).SerializeToString()])))
    check("malformed protobuf in a stream: error_message, then the stream serves the next",
          len(stream_replies) == 2 and "not a ModelInferRequest" in stream_replies[0].error_message
          and not stream_replies[1].error_message, str(stream_replies[0]))
    status, _, data = sc.http("POST", server.url("/v2/models/demo/infer"), b"{\"inputs\": [",
                              {"Content-Type": "application/json"})
    expect_http_error("malformed JSON", status, data, 400, "malformed JSON request")
    deep = (b'{"inputs": [{"name": "features", "datatype": "FP32", "shape": [1, 1, 40], "data": '
            + b"[" * 100000 + b"]" * 100000 + b"}]}")
    status, _, data = sc.http("POST", server.url("/v2/models/demo/infer"), deep,
                              {"Content-Type": "application/json"})
    expect_http_error("JSON data nested deeper than the shape", status, data, 400,
                      "input 'features': data is nested deeper than its 3 dims")
    body, headers = sc.rest_infer_body({"features": features})
    status, _, data = sc.http("POST", server.url("/v2/models/nope/infer"), body, headers)
    expect_http_error("REST unknown model", status, data, 404, "unknown model 'nope'")
    expect_error("gRPC unknown model",
                 lambda: stub.ModelInfer(sc.grpc_request(pb2, "nope", {"features": features})),
                 grpc.StatusCode.NOT_FOUND, "unknown model 'nope' (models: 'demo', 'silero', 'silero_batched')")
    expect_error("unknown input",
                 lambda: stub.ModelInfer(sc.grpc_request(pb2, "demo", {"feature": features})),
                 grpc.StatusCode.INVALID_ARGUMENT,
                 "'feature' is not an input of model 'demo' (inputs: 'features'")
    expect_error("wrong datatype",
                 lambda: stub.ModelInfer(sc.grpc_request(
                     pb2, "demo", {"features": features.astype(np.float64)})),
                 grpc.StatusCode.INVALID_ARGUMENT,
                 "input 'features' of model 'demo' is FP32, the request gives FP64")
    expect_error("wrong shape",
                 lambda: stub.ModelInfer(sc.grpc_request(
                     pb2, "demo", {"features": features[:, :, :39].copy()})),
                 grpc.StatusCode.INVALID_ARGUMENT, "input 'features': dim 2 is 39, expected 40")
    short = sc.grpc_request(pb2, "demo", {"features": features})
    short.raw_input_contents[0] = short.raw_input_contents[0][:-4]
    expect_error("raw contents shorter than the shape", lambda: stub.ModelInfer(short),
                 grpc.StatusCode.INVALID_ARGUMENT,
                 f"input 'features': raw_input_contents holds {features.nbytes - 4} bytes, its "
                 f"shape and datatype need {features.nbytes}")
    big = np.zeros((MAX_TENSOR_BYTES // 160 + 1, 1, 40), np.float32)
    expect_error("tensor over the request limit",
                 lambda: stub.ModelInfer(sc.grpc_request(pb2, "demo", {"features": big})),
                 grpc.StatusCode.INVALID_ARGUMENT,
                 f"is larger than the server's limit of {MAX_TENSOR_BYTES} bytes per tensor")
    status, _, data = sc.http("POST", server.url("/v2/models/demo/infer"),
                              *sc.rest_infer_body({"features": big}, binary=True))
    expect_http_error("REST tensor over the request limit", status, data, 400,
                      "larger than the server's limit")
    huge = np.zeros((MAX_MESSAGE_BYTES // 160 + 1, 1, 40), np.float32)
    expect_error("gRPC message over --max-message-bytes",
                 lambda: stub.ModelInfer(sc.grpc_request(pb2, "demo", {"features": huge})),
                 grpc.StatusCode.RESOURCE_EXHAUSTED, "")
    status, _, data = sc.http("POST", server.url("/v2/models/demo/infer"),
                              *sc.rest_infer_body({"features": huge}, binary=True))
    check("HTTP body over --max-message-bytes: 413", status == 413, f"status {status}")
    expect_error("sequence never started",
                 lambda: stub.ModelInfer(sc.grpc_request(pb2, "silero", {"input": chunk},
                                                         parameters={"sequence_id": 424242})),
                 grpc.StatusCode.INVALID_ARGUMENT,
                 "sequence 424242 of model 'silero' was never started")
    expect_error("sequence already ended",
                 lambda: stub.ModelInfer(sc.grpc_request(pb2, "silero", {"input": chunk},
                                                         parameters={"sequence_id": 1000})),
                 grpc.StatusCode.INVALID_ARGUMENT, "sequence 1000 of model 'silero' has ended")
    body, headers = sc.rest_infer_body({"features": features},
                                       parameters={"sequence_id": "x", "sequence_start": "yes"})
    status, _, data = sc.http("POST", server.url("/v2/models/demo/infer"), body, headers)
    expect_http_error("parameter of the wrong type", status, data, 400,
                      "parameter 'sequence_start' is a string, expected a bool")

    # A bad chunk inside a sequence is that request's error only; the stream stays open, and
    # neither this sequence's state nor another's moves.
    good = [rng.uniform(-0.5, 0.5, (1, 512)).astype(np.float32) for _ in range(3)]
    want = silero_alone(good)
    requests = [
        sc.grpc_request(pb2, "silero", {"input": good[0]},
                        parameters={"sequence_id": 7, "sequence_start": True}),
        sc.grpc_request(pb2, "silero", {"input": good[1].reshape(1, 512, 1)},
                        parameters={"sequence_id": 7}),
        sc.grpc_request(pb2, "silero", {"input": good[1]}, parameters={"sequence_id": 7}),
        sc.grpc_request(pb2, "silero", {"input": good[2]},
                        parameters={"sequence_id": 7, "sequence_end": True}),
    ]
    responses = list(stub.ModelStreamInfer(iter(requests)))
    check("stream: a bad chunk answers error_message naming it, the stream goes on",
          len(responses) == 4 and responses[1].error_message.startswith(
              "INVALID_ARGUMENT: model 'silero': input 'input'") and not responses[0].error_message and
          not responses[2].error_message, str([r.error_message for r in responses]))
    got = [sc.grpc_outputs(responses[k].infer_response)["output"] for k in (0, 2, 3)]
    check("stream: the bad chunk left the sequence's state as it was",
          all(np.array_equal(g, w[0]) for g, w in zip(got, want)))

    # A client that goes away mid-stream: its sequence stays until the idle timeout, the others
    # are untouched and the server keeps serving. The victim's requests never end the sequence:
    # the stream sends them ahead, so the server may run all of them before the cancel arrives.
    victim = [rng.uniform(-0.5, 0.5, (1, 512)).astype(np.float32) for _ in range(6)]
    bystander = [rng.uniform(-0.5, 0.5, (1, 512)).astype(np.float32) for _ in range(6)]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        cut = pool.submit(silero_stream, 9001, victim, cancel_after=2, end=False)
        whole = pool.submit(silero_stream, 9002, bystander)
        cut.result()
        bystander_got = whole.result()
    check("client disconnecting mid-stream: another sequence's results unchanged",
          all(np.array_equal(g["output"], w[0])
              for g, w in zip(bystander_got, silero_alone(bystander))))
    check("client disconnecting mid-stream: the server still serves",
          stub.ServerReady(pb2.ServerReadyRequest()).ready)

    # Idle timeout: the cancelled sequence 9001 is dropped once idle long enough.
    time.sleep(IDLE_TIMEOUT_MS / 1000 * 2.5)
    expect_error("sequence dropped after its idle timeout",
                 lambda: stub.ModelInfer(sc.grpc_request(pb2, "silero", {"input": chunk},
                                                         parameters={"sequence_id": 9001})),
                 grpc.StatusCode.INVALID_ARGUMENT,
                 "sequence 9001 of model 'silero' was dropped after its idle timeout")

    # ---- metrics ------------------------------------------------------------------------------
    status, _, data = sc.http("GET", server.url("/metrics"))
    text = data.decode()
    requests_demo = [l for l in text.splitlines() if l.startswith('rnnc_serve_requests_total{model="demo"}')]
    check("/metrics: Prometheus text with requests, errors, latency, batch sizes, sequences",
          status == 200 and requests_demo and int(requests_demo[0].split()[-1]) > 0 and
          'rnnc_serve_request_errors_total{model="demo",code="INVALID_ARGUMENT"}' in text and
          'rnnc_serve_request_duration_seconds_bucket{model="silero",le="+Inf"}' in text and
          'rnnc_serve_batch_size_count{model="silero"}' in text and
          'rnnc_serve_active_sequences{model="silero"} 0' in text and
          "# TYPE rnnc_serve_request_duration_seconds histogram" in text, text[:2000])
finally:
    channel.close()
    code = server.stop()
check("SIGTERM on an idle server: exit 0", code == 0, f"exit {code}\n{''.join(server.lines)}")

# ---- limits, overload and a graceful shutdown, on a small server ----------------------------
small = sc.Server(args.rnnc, [
    "--model", f"demo={args.demo},{DEMO_OPTIONS}", "--threads", "1", "--max-queue", "2",
    "--max-sequences", "2", "--drain-timeout-ms", "20000", "--cache-dir", args.cache_dir])
channel = grpc.insecure_channel(small.grpc_address)
stub = pb2_grpc.GRPCInferenceServiceStub(channel)
try:
    piece = rng.standard_normal((2, 1, 40)).astype(np.float32)
    for s in (1, 2):
        stub.ModelInfer(sc.grpc_request(pb2, "demo", {"features": piece},
                                        parameters={"sequence_id": s, "sequence_start": True}))
    expect_error("max sequences: RESOURCE_EXHAUSTED",
                 lambda: stub.ModelInfer(sc.grpc_request(
                     pb2, "demo", {"features": piece},
                     parameters={"sequence_id": 3, "sequence_start": True})),
                 grpc.StatusCode.RESOURCE_EXHAUSTED, "the server holds 2 sequences, its limit")
    body, headers = sc.rest_infer_body({"features": piece},
                                       parameters={"sequence_id": 4, "sequence_start": True})
    status, _, data = sc.http("POST", small.url("/v2/models/demo/infer"), body, headers)
    expect_http_error("max sequences: REST 503", status, data, 503, "its limit (--max-sequences)")

    # Overload: one inference thread, two queue slots, many long requests at once.
    long_input = rng.standard_normal((30000, 1, 40)).astype(np.float32)
    long_request = sc.grpc_request(pb2, "demo", {"features": long_input})
    def attempt(_):
        try:
            stub.ModelInfer(long_request)
            return "ok"
        except grpc.RpcError as error:
            return f"{error.code()}: {error.details()}"
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        outcomes = list(pool.map(attempt, range(16)))
    refused = [o for o in outcomes if o != "ok"]
    check("full request queue: UNAVAILABLE, the rest served",
          refused and all(o.startswith("StatusCode.UNAVAILABLE: the server's request queue is full")
                          for o in refused) and "ok" in outcomes, str(outcomes))

    # Deadline: a request that waits behind others longer than its deadline is not run.
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        blocker = pool.submit(stub.ModelInfer, long_request)
        check("deadline: the blocking request is in flight",
              wait_for_metric(small, "rnnc_serve_requests_in_flight 1"))
        late = pool.submit(lambda: stub.ModelInfer(
            sc.grpc_request(pb2, "demo", {"features": piece}, parameters={"timeout": 1000})))
        try:
            late.result()
            late_outcome = "ok"
        except grpc.RpcError as error:
            late_outcome = f"{error.code()}: {error.details()}"
        blocker.result()
    check("per-request deadline (timeout parameter) honoured by the server",
          late_outcome == "StatusCode.DEADLINE_EXCEEDED: the request's deadline passed while it "
                          "waited for an inference thread", late_outcome)

    # SIGTERM with requests in flight: they complete, then the process exits 0.
    want = demo_reference.run(None, {"features": long_input})[0]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        in_flight = [pool.submit(stub.ModelInfer, long_request) for _ in range(2)]
        # One running, one queued, before the signal.
        check("SIGTERM: two requests in flight", wait_for_metric(small, "rnnc_serve_queued_requests 1")
              and wait_for_metric(small, "rnnc_serve_requests_in_flight 2"))
        small.terminate()
        try:
            results = [f.result(timeout=60) for f in in_flight]
            failure = ""
        except grpc.RpcError as error:
            results = []
            failure = (f"{error.code()}: {error.details()}; server exit {small.stop()}:\n"
                       + "".join(small.lines))
    check("SIGTERM: requests in flight complete with correct results",
          results and all(np.array_equal(sc.grpc_outputs(r)["log_probs"], want) for r in results),
          failure)
finally:
    channel.close()
    code = small.stop()
check("SIGTERM with requests in flight: exit 0", code == 0, f"exit {code}\n{''.join(small.lines)}")
# ---- --warm-only fills a kernel cache for a portable target; a server starts on it ----------
with tempfile.TemporaryDirectory() as warm_cache:
    model_args = ["--model", f"demo={args.demo},{DEMO_OPTIONS}", "--target", "x86-64-v3",
                  "--cache-dir", warm_cache]
    warm = subprocess.run([args.rnnc, "serve", "--warm-only"] + model_args, capture_output=True,
                          text=True, timeout=300)
    check("--warm-only compiles into the cache and exits 0",
          warm.returncode == 0 and "rnnc serve: warmed 'demo'" in warm.stdout and
          any(os.scandir(warm_cache)), warm.stdout + warm.stderr)
    warmed = sc.Server(args.rnnc, model_args)
    print(f"server on the warmed x86-64-v3 cache ready in {warmed.ready_seconds:.3f} s", flush=True)
    with grpc.insecure_channel(warmed.grpc_address) as warm_channel:
        got = sc.grpc_outputs(pb2_grpc.GRPCInferenceServiceStub(warm_channel).ModelInfer(
            sc.grpc_request(pb2, "demo", {"features": features})))["log_probs"]
    want = demo_reference.run(None, {"features": features})[0]
    check("a server on the warmed x86-64-v3 cache serves (within 1e-4 of the host-target library)",
          np.abs(got - want).max() <= 1e-4, f"max diff {np.abs(got - want).max()}")
    check("warmed server: exit 0", warmed.stop() == 0)

# ---- TLS: both protocols with --tls-cert / --tls-key (a self-signed certificate) -------------
with tempfile.TemporaryDirectory() as tls_dir:
    cert, key = os.path.join(tls_dir, "cert.pem"), os.path.join(tls_dir, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True)
    secure = sc.Server(args.rnnc, ["--model", f"demo={args.demo},{DEMO_OPTIONS}",
                                   "--tls-cert", cert, "--tls-key", key,
                                   "--cache-dir", args.cache_dir])
    try:
        credentials = grpc.ssl_channel_credentials(root_certificates=open(cert, "rb").read())
        with grpc.secure_channel(secure.grpc_address, credentials) as tls_channel:
            tls_stub = pb2_grpc.GRPCInferenceServiceStub(tls_channel)
            check("TLS: gRPC ServerReady over TLS",
                  tls_stub.ServerReady(pb2.ServerReadyRequest()).ready)
        context = ssl.create_default_context(cafile=cert)
        with urllib.request.urlopen("https://" + secure.http_address + "/v2/health/ready",
                                    context=context, timeout=30) as response:
            check("TLS: HTTPS GET /v2/health/ready", response.status == 200)
        with grpc.insecure_channel(secure.grpc_address) as plain:
            expect_error("TLS: a plaintext client is refused",
                         lambda: pb2_grpc.GRPCInferenceServiceStub(plain).ServerLive(
                             pb2.ServerLiveRequest(), timeout=5),
                         grpc.StatusCode.UNAVAILABLE, "")
    finally:
        code = secure.stop()
    check("TLS server: exit 0", code == 0, f"exit {code}")
print("serve_test: all passed")
