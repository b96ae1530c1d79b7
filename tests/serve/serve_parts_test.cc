// The server's protocol-independent parts on their own: --model parsing, request parameters,
// tensor size limits, the sequence table's rules and the Prometheus exposition. The server end
// to end is tests/serve/serve_test.py.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <thread>

#include "serve/inference_service.h"
#include "serve/metrics.h"
#include "serve/model_spec.h"
#include "serve/parameters.h"
#include "serve/sequence_table.h"
#include "serve/status.h"
#include "serve/tensor.h"

namespace rnnc::serve {
namespace {

template <typename Call>
std::string failure(Call&& call) {
  try {
    call();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ModelSpec, ParsesEveryOption) {
  ModelSpec spec = parse_model_spec(
      "vad=/m/silero.onnx,fix=sr=16000,dim=batch=1,quantize=default,plan=sequential,threads=2,"
      "state=stateN:state,batching=on,max-batch=8,max-wait-us=500,batch-axis=state:1,"
      "batch-axis=sr:-1");
  EXPECT_EQ(spec.name, "vad");
  EXPECT_EQ(spec.path, "/m/silero.onnx");
  EXPECT_EQ(spec.options.fixed_inputs.at("sr"), std::vector<int64_t>{16000});
  EXPECT_EQ(spec.dims.at("batch"), 1);
  EXPECT_EQ(spec.options.quantization_dims.at("batch"), 1);
  EXPECT_EQ(spec.options.quantization_config, "default");
  EXPECT_EQ(spec.options.plan, Plan::kSequential);
  EXPECT_EQ(spec.options.threads, 2);
  ASSERT_EQ(spec.state.size(), 1u);
  EXPECT_EQ(spec.state[0], std::make_pair(std::string("stateN"), std::string("state")));
  EXPECT_TRUE(spec.batching);
  EXPECT_EQ(spec.max_batch, 8);
  EXPECT_EQ(spec.max_wait_us, 500);
  EXPECT_EQ(spec.batch_axes, (std::map<std::string, int>{{"sr", -1}, {"state", 1}}));
  EXPECT_EQ(parse_model_spec("m=a.onnx,fix=x=1:2:3").options.fixed_inputs.at("x"),
            (std::vector<int64_t>{1, 2, 3}));
}

TEST(ModelSpec, ErrorsNameTheOption) {
  EXPECT_EQ(failure([] { parse_model_spec("model.onnx"); }),
            "--model option 'NAME=PATH' expects NAME=VALUE, got 'model.onnx'");
  EXPECT_EQ(failure([] { parse_model_spec("m=a.onnx,colour=red"); }),
            "--model 'm': unknown option 'colour' (fix, dim, quantize, plan, threads, state, "
            "batch-axis, batching, max-batch, max-wait-us)");
  EXPECT_EQ(failure([] { parse_model_spec("m=a.onnx,batch-axis=state:-2"); }),
            "--model batch-axis state: -2 is not -1 or an axis");
  EXPECT_EQ(failure([] { parse_model_spec("m=a.onnx,batch-axis=state=1"); }),
            "--model option 'batch-axis' expects NAME:VALUE, got 'state=1'");
  EXPECT_EQ(failure([] { parse_model_spec("m=a.onnx,fix=sr=fast"); }),
            "--model fix sr: 'fast' is not an integer");
  EXPECT_EQ(failure([] { parse_model_spec("m=a.onnx,batching=maybe"); }),
            "--model option 'batching' expects on or off, got 'maybe'");
  EXPECT_EQ(failure([] { parse_model_spec("m=a.onnx,state=stateN"); }),
            "--model option 'state' expects NAME:VALUE, got 'stateN'");
  EXPECT_EQ(failure([] { parse_model_spec("a/b=a.onnx"); }),
            "--model name 'a/b' must not contain '/' (it is a URL path segment)");
}

TEST(RequestParameters, SequenceAndTimeout) {
  InferRequest request;
  apply_request_parameters({{"sequence_id", int64_t{42}},
                            {"sequence_start", true},
                            {"timeout", int64_t{1000}},
                            {"custom", std::string("ignored")}},
                           request);
  EXPECT_EQ(request.sequence.id, "42");
  EXPECT_TRUE(request.sequence.start);
  EXPECT_FALSE(request.sequence.end);
  EXPECT_LE(request.deadline, Clock::now() + std::chrono::milliseconds(1));

  InferRequest none;
  apply_request_parameters({{"sequence_id", int64_t{0}}}, none);
  EXPECT_EQ(none.sequence.id, "");  // 0 means no sequence
}

TEST(RequestParameters, ErrorsNameTheParameter) {
  InferRequest request;
  EXPECT_EQ(failure([&] {
              apply_request_parameters({{"sequence_end", int64_t{1}}}, request);
            }),
            "parameter 'sequence_end' is a int64, expected a bool");
  EXPECT_EQ(failure([&] {
              apply_request_parameters({{"sequence_id", 1.5}}, request);
            }),
            "parameter 'sequence_id' is a double, expected an integer or a string");
  InferRequest start_only;
  EXPECT_EQ(failure([&] {
              apply_request_parameters({{"sequence_start", true}}, start_only);
            }),
            "parameter 'sequence_start' needs a non-zero 'sequence_id'");
}

TEST(TensorBytes, ShapeAndLimit) {
  EXPECT_EQ(tensor_bytes("x", ElementType::kFloat32, {2, 3}, 1024), 24u);
  EXPECT_EQ(tensor_bytes("x", ElementType::kInt64, {0, 1 << 30}, 1024), 0u);
  EXPECT_EQ(failure([] {
              tensor_bytes("x", ElementType::kFloat32, {2, -1}, 1024);
            }),
            "input 'x': dim 1 is -1, must be >= 0");
  EXPECT_EQ(failure([] {
              tensor_bytes("x", ElementType::kFloat32, {16, 17}, 1024);
            }),
            "input 'x' (FP32[16, 17]) is larger than the server's limit of 1024 bytes per "
            "tensor (--max-tensor-bytes)");
  // Dims whose product overflows 64 bits are over any limit, not wrapped around.
  EXPECT_NE(failure([] {
              tensor_bytes("x", ElementType::kFloat32, {int64_t{1} << 40, int64_t{1} << 40}, 1024);
            }).find("larger than the server's limit"),
            std::string::npos);
  // A zero dim after dims over the limit is still an empty tensor; a negative dim anywhere is
  // named as such.
  EXPECT_EQ(tensor_bytes("x", ElementType::kFloat32, {int64_t{1} << 40, 0}, 1024), 0u);
  EXPECT_EQ(failure([] {
              tensor_bytes("x", ElementType::kFloat32, {int64_t{1} << 40, -3}, 1024);
            }),
            "input 'x': dim 1 is -3, must be >= 0");
}

// A backend whose streams count the chunks they ran.
class CountingBackend : public SequenceBackend {
 public:
  class Stream : public SequenceStream {
   public:
    void submit(std::vector<HostTensor>, ChunkDone done) override {
      ++chunks;
      done(nullptr, {});
    }
    int chunks = 0;
  };
  std::unique_ptr<SequenceStream> open() override {
    ++opened;
    return std::make_unique<Stream>();
  }
  std::vector<uint64_t> batch_sizes() const override { return {}; }
  int opened = 0;
};

SequenceControl control(const std::string& id, bool start = false, bool end = false) {
  return {id, start, end};
}

TEST(SequenceTable, StartContinueEnd) {
  SequenceTable table(4, std::chrono::milliseconds(60'000));
  CountingBackend backend;
  auto first = table.acquire("m", control("7", true), backend);
  table.release("m", control("7", true), first, false);
  auto again = table.acquire("m", control("7"), backend);
  EXPECT_EQ(again, first);
  EXPECT_EQ(table.active("m"), 1u);
  table.release("m", control("7", false, true), again, true);
  EXPECT_EQ(table.active("m"), 0u);
  EXPECT_EQ(failure([&] { table.acquire("m", control("7"), backend); }),
            "sequence 7 of model 'm' has ended (its sequence_end request ran) (start it again "
            "with sequence_start=true)");
  EXPECT_EQ(failure([&] { table.acquire("m", control("8"), backend); }),
            "sequence 8 of model 'm' was never started (send sequence_start=true first)");
  // Ids are per model.
  EXPECT_EQ(failure([&] { table.acquire("other", control("7"), backend); }),
            "sequence 7 of model 'other' was never started (send sequence_start=true first)");
}

TEST(SequenceTable, LimitRefusesOnlyNewSequences) {
  SequenceTable table(2, std::chrono::milliseconds(60'000));
  CountingBackend backend;
  for (const char* id : {"a", "b"}) {
    table.release("m", control(id, true), table.acquire("m", control(id, true), backend), false);
  }
  try {
    table.acquire("m", control("c", true), backend);
    FAIL() << "a third sequence started";
  } catch (const RequestError& e) {
    EXPECT_EQ(e.code(), StatusCode::kResourceExhausted);
    EXPECT_STREQ(e.what(),
                 "cannot start sequence c of model 'm': the server holds 2 sequences, its limit "
                 "(--max-sequences)");
  }
  // A restart of a live sequence needs no room, and gives it fresh state.
  auto restarted = table.acquire("m", control("a", true), backend);
  EXPECT_EQ(backend.opened, 3);
  table.release("m", control("a", true), restarted, false);
  EXPECT_EQ(table.active(), 2u);
}

TEST(SequenceTable, IdleSequencesExpireButNotWhileRunning) {
  SequenceTable table(4, std::chrono::milliseconds(10));
  CountingBackend backend;
  auto running = table.acquire("m", control("busy", true), backend);
  table.release("m", control("idle", true), table.acquire("m", control("idle", true), backend),
                false);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(table.expire_idle(Clock::now()), 1u);  // "busy" has a chunk in flight
  EXPECT_EQ(failure([&] { table.acquire("m", control("idle"), backend); }),
            "sequence idle of model 'm' was dropped after its idle timeout "
            "(--sequence-idle-timeout) (start it again with sequence_start=true)");
  table.release("m", control("busy"), running, false);
  EXPECT_EQ(table.active(), 1u);
}

// The server waits for every request in flight to be answered before it closes its connections
// (serve/server.cc). A request whose answer is held back keeps the wait going until its deadline;
// once answered, the wait ends. (No model is loaded: the request is answered NOT_FOUND.)
TEST(InferenceService, WaitsUntilEveryRequestIsAnswered) {
  InferenceService service({}, ServiceOptions{});
  const auto soon = [](int ms) {
    return std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  };
  EXPECT_TRUE(service.wait_until_answered(soon(0)));

  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<StatusCode> answered;
  InferRequest request;
  request.model_name = "absent";
  service.infer(std::move(request), [&](StatusCode code, const std::string&, InferResponse) {
    released.wait();
    answered.set_value(code);
  });
  EXPECT_FALSE(service.wait_until_answered(soon(50)));
  release.set_value();
  EXPECT_TRUE(service.wait_until_answered(soon(10'000)));
  EXPECT_EQ(answered.get_future().get(), StatusCode::kNotFound);
}

TEST(Metrics, PrometheusExposition) {
  Metrics metrics({"a\"b"});
  metrics.record("a\"b", StatusCode::kOk, 300);
  metrics.record("a\"b", StatusCode::kOk, 3'000'000);
  metrics.record("a\"b", StatusCode::kInvalidArgument, 10);
  metrics.record("nope", StatusCode::kNotFound, 10);
  metrics.batch_sizes = [](const std::string&) { return std::vector<uint64_t>{0, 4, 0, 2}; };
  const std::string text = metrics.exposition();
  auto has = [&](const std::string& line) {
    return text.find("\n" + line + "\n") != std::string::npos;
  };
  EXPECT_TRUE(has("# TYPE rnnc_serve_requests_total counter")) << text;
  EXPECT_TRUE(has("rnnc_serve_requests_total{model=\"a\\\"b\"} 3")) << text;
  EXPECT_TRUE(has("rnnc_serve_requests_total{model=\"\"} 1")) << text;
  EXPECT_TRUE(has("rnnc_serve_request_errors_total{model=\"a\\\"b\",code=\"INVALID_ARGUMENT\"} 1"))
      << text;
  EXPECT_TRUE(has("rnnc_serve_request_errors_total{model=\"\",code=\"NOT_FOUND\"} 1")) << text;
  // The two durations recorded above (0.0003 and 3 seconds) in cumulative buckets: the first
  // counts from le=0.0005 on, the second from le=10 on.
  EXPECT_TRUE(has("rnnc_serve_request_duration_seconds_bucket{model=\"a\\\"b\",le=\"0.00025\"} 0"));
  EXPECT_TRUE(has("rnnc_serve_request_duration_seconds_bucket{model=\"a\\\"b\",le=\"0.0005\"} 1"));
  EXPECT_TRUE(has("rnnc_serve_request_duration_seconds_bucket{model=\"a\\\"b\",le=\"2.5\"} 1"));
  EXPECT_TRUE(has("rnnc_serve_request_duration_seconds_bucket{model=\"a\\\"b\",le=\"10\"} 2"));
  EXPECT_TRUE(has("rnnc_serve_request_duration_seconds_bucket{model=\"a\\\"b\",le=\"+Inf\"} 2"));
  EXPECT_TRUE(has("rnnc_serve_request_duration_seconds_sum{model=\"a\\\"b\"} 3.0003"));
  EXPECT_TRUE(has("rnnc_serve_request_duration_seconds_count{model=\"a\\\"b\"} 2"));
  // Batch sizes: 4 runs of 1 chunk, 2 runs of 3.
  EXPECT_TRUE(has("rnnc_serve_batch_size_bucket{model=\"a\\\"b\",le=\"1\"} 4")) << text;
  EXPECT_TRUE(has("rnnc_serve_batch_size_bucket{model=\"a\\\"b\",le=\"2\"} 4"));
  EXPECT_TRUE(has("rnnc_serve_batch_size_bucket{model=\"a\\\"b\",le=\"4\"} 6"));
  EXPECT_TRUE(has("rnnc_serve_batch_size_sum{model=\"a\\\"b\"} 10"));
  EXPECT_TRUE(has("rnnc_serve_batch_size_count{model=\"a\\\"b\"} 6"));
}

}  // namespace
}  // namespace rnnc::serve
