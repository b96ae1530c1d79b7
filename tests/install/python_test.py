"""The installed Python module rnnc against the installed C++ API (check_package.sh runs it with
Debian's /usr/bin/python3 and only the installed module directory on its path).

  python_test.py --module-dir DIR --api-outputs BIN --source SRC --work DIR --cache-dir DIR
                 [--silero MODEL]

Checks: the module is the installed one; the demo model and Silero VAD through
rnnc.InferenceSession equal api_outputs (the C++ API, tests/install/api_outputs.cc) bit for bit;
streams carry state (chunked runs equal one whole run; Silero streamed equals threading its state
by hand, as with onnxruntime); the stream batcher (streams from Python threads in batched runs,
each equal to its own stream within the C++ batcher test's tolerances, tests/runtime/
batcher_test.cc; overload, closing, cancelling, a bad chunk); daemon threads inside rnnc calls
at interpreter exit; errors are rnnc's messages as exception types; rnnc.quantize.
"""

import argparse
import os
import subprocess
import sys
import threading

parser = argparse.ArgumentParser()
parser.add_argument("--module-dir", required=True)
parser.add_argument("--api-outputs", required=True)
parser.add_argument("--source", required=True)
parser.add_argument("--work", required=True)
parser.add_argument("--cache-dir", required=True)
parser.add_argument("--silero", default="")
parser.add_argument("--version", required=True)
args = parser.parse_args()

import numpy as np  # noqa: E402  (Debian's python3-numpy)
import rnnc  # noqa: E402

failures = []


def check(condition, what):
    print(("ok   " if condition else "FAIL ") + what)
    if not condition:
        failures.append(what)


def raises(kind, message, call):
    """call() must raise rnnc.<kind> whose message is `message` (or starts with it, `...` ending)."""
    try:
        call()
    except rnnc.Error as error:
        text = str(error)
        matches = (text.startswith(message[:-3]) if message.endswith("...") else text == message)
        check(type(error) is kind and matches,
              f"{kind.__name__}: {message!r} (got {type(error).__name__}: {text!r})")
        return
    check(False, f"{kind.__name__}: {message!r} (nothing raised)")


def api_outputs(model, inputs, fix=()):
    """The C++ API's outputs for `inputs` ({name: array}), through api_outputs."""
    out = os.path.join(args.work, "api_" + os.path.basename(model))
    os.makedirs(out, exist_ok=True)
    command = [args.api_outputs, model, out, "--cache-dir", args.cache_dir]
    for name_value in fix:
        command += ["--fix", name_value]
    for name, array in inputs.items():
        path = os.path.join(out, "input_" + name + ".npy")
        np.save(path, array)
        command.append(f"{name}={path}")
    subprocess.run(command, check=True)
    return lambda name: np.load(os.path.join(out, name.replace("/", "_") + ".npy"))


# ---- the installed module ----------------------------------------------------------------------
module_dir = os.path.realpath(args.module_dir)
check(os.path.realpath(rnnc.__file__).startswith(module_dir + os.sep),
      f"rnnc imported from the installed {module_dir} ({rnnc.__file__})")
check(rnnc.__version__ == args.version, f"rnnc.__version__ == {args.version!r}")

# ---- the demo model: onnxruntime's API shape, equal to the C++ API ------------------------------
demo = os.path.join(args.source, "models/demo/lstm_demo.onnx")
features = np.load(os.path.join(args.source, "models/demo/input.npy"))
session = rnnc.InferenceSession(demo, cache_dir=args.cache_dir)
inputs = [(arg.name, arg.shape, arg.type) for arg in session.get_inputs()]
outputs = [(arg.name, arg.shape, arg.type) for arg in session.get_outputs()]
check(inputs == [("features", ["seq", "batch", 40], "tensor(float)")], f"get_inputs() {inputs}")
check(outputs == [("log_probs", ["seq", "batch", 32], "tensor(float)")], f"get_outputs() {outputs}")
check(len(session.recurrent_state) == 4, "4 recurrent state pairs exposed for streams")

(log_probs,) = session.run(None, {"features": features})
expected = api_outputs(demo, {"features": features})("log_probs")
check(log_probs.dtype == np.float32 and log_probs.shape == (50, 1, 32), "run() shape and dtype")
check(np.array_equal(log_probs, expected), "demo model: run() == the C++ API, bit for bit")
(by_name,) = session.run(["log_probs"], {"features": np.asfortranarray(features)})
check(np.array_equal(by_name, expected), "a Fortran-order input and output_names give the same")
from_bytes = rnnc.InferenceSession(open(demo, "rb").read(), cache_dir=args.cache_dir)
check(np.array_equal(from_bytes.run(None, {"features": features})[0], expected),
      "a model loaded from bytes gives the same")

# Threads share one session (the GIL is released during runs; each run has its own state).
results = [None] * 4


def run_in_thread(k):
    results[k] = session.run(None, {"features": features})[0]


threads = [threading.Thread(target=run_in_thread, args=(k,)) for k in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
check(all(np.array_equal(r, expected) for r in results), "4 threads running one session at once")

# A stream carries state: 5 chunks of 10 frames equal one run of 50 frames.
stream = session.new_stream()
chunks = [stream.run(None, {"features": features[t:t + 10]})[0] for t in range(0, 50, 10)]
check(np.array_equal(np.concatenate(chunks), expected), "stream: 5 chunks == one run, bit for bit")
state = stream.state()
check(len(state) == 4 and all(v.shape == (1, 1, 128) for v in state.values()),
      f"stream.state(): 4 arrays of (1, 1, 128) ({ {k: v.shape for k, v in state.items()} })")
stream.reset()
check(np.array_equal(stream.run(None, {"features": features[:10]})[0], chunks[0]),
      "stream.reset() starts over")
check(not np.array_equal(stream.run(None, {"features": features[:10]})[0], chunks[0]),
      "without reset, the same chunk gives other outputs (the state moved on)")

# ---- the stream batcher: streams of 10-frame chunks from Python threads --------------------------
# A batch-1 run and a batched one step with different kernels (batch tiles), whose sums may round
# differently in the last bits: within the C++ batcher test's 1e-5 + 1e-4 |alone|.
def close_to(batched, alone, atol, rtol):
    return (batched.shape == alone.shape and
            bool(np.all(np.abs(batched - alone) <= atol + rtol * np.abs(alone))))


voices = [(features * (1 + 0.125 * k)).astype(np.float32) for k in range(8)]
alone = [session.run(None, {"features": voice})[0] for voice in voices]
batcher = rnnc.StreamBatcher(session, max_batch=8, max_wait_us=20000)
check(batcher.batch_axes()["features"] == 1 and batcher.batch_axes()["log_probs"] == 1,
      "StreamBatcher: the batch axes of features and log_probs are 1")
batched = [None] * 8


def stream_in_thread(k):
    with batcher.open_stream() as voice_stream:
        batched[k] = np.concatenate([voice_stream.run(None, {"features": voices[k][t:t + 10]})[0]
                                     for t in range(0, 50, 10)])


threads = [threading.Thread(target=stream_in_thread, args=(k,)) for k in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
check(all(close_to(batched[k], alone[k], 1e-5, 1e-4) for k in range(8)),
      "StreamBatcher: 8 streams run() from 8 threads == each voice run alone")
# Chunks submitted without waiting, so that runs of several streams form.
voice_streams = [batcher.open_stream() for _ in range(8)]
pending = [[s.submit(["log_probs"], {"features": voices[k][t:t + 10]}) for t in range(0, 50, 10)]
           for k, s in enumerate(voice_streams)]
submitted = [np.concatenate([chunk.result()[0] for chunk in chunks]) for chunks in pending]
check(all(close_to(submitted[k], alone[k], 1e-5, 1e-4) for k in range(8)),
      "StreamBatcher: 8 streams' submit() results == each voice run alone")
check(all(chunk.done() for chunks in pending for chunk in chunks), "PendingChunk.done() after result()")
stats = batcher.stats()
check(stats["chunks"] == 80 and max(stats["batch_sizes"]) > 1 and
      sum(size * runs for size, runs in stats["batch_sizes"].items()) == 80,
      f"StreamBatcher.stats(): 80 chunks, batches of more than one ({stats})")
voice_streams[0].reset()
(restarted,) = voice_streams[0].run(None, {"features": voices[0][:10]})
check(close_to(restarted, alone[0][:10], 1e-5, 1e-4), "BatchStream.reset() starts the stream over")
fresh = batcher.open_stream()
(chunk_0,) = fresh.run(None, {"features": voices[1][:10]})
raises(rnnc.InvalidInputError, "input 'features': dim 2 is 3, expected 40 (f32[seq, batch, 40])",
       lambda: fresh.submit(None, {"features": voices[1][10:20, :, :3]}))
(chunk_1,) = fresh.run(None, {"features": voices[1][10:20]})
check(close_to(np.concatenate([chunk_0, chunk_1]), alone[1][:20], 1e-5, 1e-4),
      "a bad chunk raises from submit() and leaves its stream's state as it was")
voice_streams[2].close()
raises(rnnc.InvalidInputError, f"stream {voice_streams[2].id} is closed",
       lambda: voice_streams[2].run(None, {"features": voices[2][:10]}))

# A full queue is an error; closing the batcher cancels a queued chunk. The chunk waits (up to 2
# s) for the other stream to join its run.
waiting = rnnc.StreamBatcher(session, max_wait_us=2000000, queue_capacity=1)
first, second = waiting.open_stream(), waiting.open_stream()
queued = first.submit(None, {"features": features[:10]})
raises(rnnc.OverloadedError, "stream batcher overloaded: 1 chunks are queued (queue_capacity 1); "
       "submit again later", lambda: second.submit(None, {"features": features[:10]}))
try:
    queued.result(timeout=0.01)
    check(False, "PendingChunk.result(timeout) raises TimeoutError while the chunk waits")
except TimeoutError:
    check(not queued.done(), "PendingChunk.result(timeout) raises TimeoutError while the chunk waits")
waiting.close()
raises(rnnc.CancelledError, f"stream {first.id}: chunk cancelled, its StreamBatcher was destroyed",
       lambda: queued.result())
raises(rnnc.InvalidInputError, f"stream {second.id}: its StreamBatcher was destroyed",
       lambda: second.submit(None, {"features": features[:10]}))
raises(rnnc.InvalidInputError, "the StreamBatcher is closed", lambda: waiting.open_stream())
with rnnc.StreamBatcher(session) as scoped:
    scoped_stream = scoped.open_stream()
raises(rnnc.InvalidInputError, f"stream {scoped_stream.id}: its StreamBatcher was destroyed",
       lambda: scoped_stream.run(None, {"features": features[:10]}))
raises(rnnc.InvalidInputError, "BatcherOptions::max_batch = 0, must be >= 1",
       lambda: rnnc.StreamBatcher(session, max_batch=0))

# ---- daemon threads still inside rnnc calls when the interpreter exits ---------------------------
# Python 3.11 ends them with pthread_exit as they take the GIL back; the module keeps that unwind
# out of its C++ frames (they wait for the process to end, from its atexit hook on), so the
# process exits cleanly.
daemon_script = f"""
import threading, time, numpy as np, rnnc
session = rnnc.InferenceSession({demo!r}, cache_dir={args.cache_dir!r})
frame = np.load({os.path.join(args.source, "models/demo/input.npy")!r})[:1]
batcher = rnnc.StreamBatcher(session, max_wait_us=100)
def loop():
    stream, batch_stream = session.new_stream(), batcher.open_stream()
    while True:
        stream.run(None, {{"features": frame}})
        batch_stream.submit(None, {{"features": frame}}).result()
for _ in range(4):
    threading.Thread(target=loop, daemon=True).start()
time.sleep(%s)
"""
codes = [subprocess.run([sys.executable, "-c", daemon_script % delay], timeout=120).returncode
         for delay in ("0.02", "0.1", "0.3")]
check(codes == [0, 0, 0], f"4 daemon threads in rnnc calls at interpreter exit: statuses {codes}")
# The main thread still runs rnnc in an atexit handler that runs after the module's own hook.
late_script = f"""
import atexit, numpy as np
held = {{}}
atexit.register(lambda: print("late run", held["session"].run(None, {{"features": held["frame"]}})[0].shape))
import rnnc
held["session"] = rnnc.InferenceSession({demo!r}, cache_dir={args.cache_dir!r})
held["frame"] = np.load({os.path.join(args.source, "models/demo/input.npy")!r})[:3]
"""
late = subprocess.run([sys.executable, "-c", late_script], timeout=120, capture_output=True,
                      text=True)
check(late.returncode == 0 and "late run (3, 1, 32)" in late.stdout,
      f"an atexit handler after the module's runs rnnc: status {late.returncode}, "
      f"output {late.stdout.strip()!r} {late.stderr.strip()[-200:]!r}")

# ---- errors: rnnc's messages, as exception types ------------------------------------------------
# The inputs a session takes include the state inputs rnnc exposed (a stream feeds them).
raises(rnnc.InvalidInputError, "'feature' is not an input of the model (inputs: 'features', "
       "'/lstm/LSTM.initial_h', '/lstm/LSTM.initial_c', '/lstm/LSTM_1.initial_h', "
       "'/lstm/LSTM_1.initial_c')",
       lambda: session.run(None, {"feature": features}))
raises(rnnc.InvalidInputError, "input 'features'...",
       lambda: session.run(None, {"features": features.astype(np.float64)}))
raises(rnnc.InvalidInputError, "'probs' is not an output of the model (outputs: 'log_probs')",
       lambda: session.run(["probs"], {"features": features}))
raises(rnnc.IoError, "cannot open model file '/nonexistent/model.onnx'",
       lambda: rnnc.InferenceSession("/nonexistent/model.onnx"))
raises(rnnc.InvalidInputError, "unknown execution plan 'fast' (expected auto, sequential, "
       "parallel or pipeline)", lambda: rnnc.InferenceSession(demo, plan="fast"))
check(issubclass(rnnc.InvalidInputError, rnnc.Error) and issubclass(rnnc.Error, RuntimeError),
      "rnnc.InvalidInputError < rnnc.Error < RuntimeError")

# ---- Silero VAD: its own state, fixed sample rate ------------------------------------------------
if not args.silero or not os.path.exists(args.silero):
    print(f"SKIP Silero VAD: {args.silero or 'no model given'} is absent "
          "(models/fetch_silero.sh build/models fetches it)")
else:
    vad = rnnc.InferenceSession(args.silero, fix={"sr": 16000}, cache_dir=args.cache_dir)
    names = [arg.name for arg in vad.get_inputs()]
    check(names == ["input", "state"], f"Silero inputs without the fixed 'sr': {names}")
    rng = np.random.default_rng(29)
    audio = (0.1 * rng.standard_normal((8, 1, 512))).astype(np.float32)
    zeros = np.zeros((2, 1, 128), np.float32)
    probability, state_n = vad.run(["output", "stateN"], {"input": audio[0], "state": zeros})
    cxx = api_outputs(args.silero, {"input": audio[0], "state": zeros}, fix=["sr=16000"])
    check(np.array_equal(probability, cxx("output")) and np.array_equal(state_n, cxx("stateN")),
          "Silero VAD: run() == the C++ API, bit for bit")

    # Streamed: the stream threads stateN -> state; by hand, as onnxruntime code does.
    stream = vad.new_stream(state={"stateN": "state"})
    state, same = zeros, True
    for chunk in audio:
        (streamed,) = stream.run(["output"], {"input": chunk})
        by_hand, state = vad.run(["output", "stateN"], {"input": chunk, "state": state})
        same = same and np.array_equal(streamed, by_hand)
    check(same, "Silero VAD streamed over 8 chunks == threading its state by hand")
    check(np.array_equal(stream.state()["state"], state), "stream.state()['state'] == stateN")

    # 8 Silero streams through a batcher, each against its own stream. A stream's runs take the
    # program specialized for batch 1 and the batcher's the generic one, whose states differ by
    # up to ~1e-4: within the C++ batcher test's 1e-4 + 1e-3 |alone|.
    vad_batcher = rnnc.StreamBatcher(vad, state={"stateN": "state"}, max_batch=8,
                                     max_wait_us=20000)
    speakers = [(audio * (1 + 0.25 * k)).astype(np.float32) for k in range(8)]
    vad_streams = [vad_batcher.open_stream() for _ in speakers]
    pending = [[s.submit(["output"], {"input": chunk}) for chunk in speaker]
               for s, speaker in zip(vad_streams, speakers)]
    same = True
    for chunks, speaker in zip(pending, speakers):
        own = vad.new_stream(state={"stateN": "state"})
        for chunk, samples in zip(chunks, speaker):
            same = same and close_to(chunk.result()[0], own.run(["output"], {"input": samples})[0],
                                     1e-4, 1e-3)
    batches = vad_batcher.stats()["batch_sizes"]
    check(same and max(batches) > 1,
          f"Silero VAD: 8 streams through a StreamBatcher == each alone (batches {batches})")
    vad_batcher.close()

# ---- rnnc.quantize: `rnnc quantize` --------------------------------------------------------------
quantized = os.path.join(args.work, "demo_int8.onnx")
report = os.path.join(args.work, "demo_int8.md")
summary = rnnc.quantize(demo, quantized, report=report, calibrate=[{"features": features}])
check(summary["quantized_nodes"] >= 2 and
      summary["weight_bytes_after"] < summary["weight_bytes_before"] / 3,
      f"quantize: {summary['quantized_nodes']} nodes, weights {summary['weight_bytes_before']} -> "
      f"{summary['weight_bytes_after']} bytes")
check(open(report).read().startswith("# rnnc quantize report"), "quantize wrote the report")
(int8,) = rnnc.InferenceSession(quantized, cache_dir=args.cache_dir).run(None, {"features": features})
error = float(np.max(np.abs(np.exp(int8) - np.exp(expected))))
check(0 < error < 1e-3, f"the int8 model's probabilities differ from float's, by < 1e-3 ({error:.2e})")
raises(rnnc.IoError, "cannot open model file '/nonexistent/model.onnx'",
       lambda: rnnc.quantize("/nonexistent/model.onnx", quantized))

print(f"{len(failures)} failed" if failures else "python_test: all passed")
sys.exit(1 if failures else 0)
