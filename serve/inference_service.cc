#include "serve/inference_service.h"

#include <algorithm>
#include <set>

#include "ir/error.h"
#include "serve/datatype.h"
#include "serve/server_metadata.h"

namespace rnnc::serve {

namespace {

std::vector<std::string> names_of(const std::vector<ModelSpec>& specs) {
  std::vector<std::string> names;
  for (const ModelSpec& spec : specs) names.push_back(spec.name);
  return names;
}

template <typename Tensors>
std::string quoted_names(const Tensors& tensors) {
  std::string list;
  for (const auto& tensor : tensors) list += (list.empty() ? "'" : ", '") + tensor.name + "'";
  return list;
}

const TensorMetadata* find_tensor(const std::vector<TensorMetadata>& tensors,
                                  const std::string& name) {
  for (const TensorMetadata& tensor : tensors) {
    if (tensor.name == name) return &tensor;
  }
  return nullptr;
}

// Input names and datatypes against the model's; shapes are the runtime's to check (its messages
// name the input and the expected shape).
void check_request(const ServedModel& model, const InferRequest& request) {
  std::set<std::string> seen;
  for (const HostTensor& input : request.inputs) {
    const TensorMetadata* expected = find_tensor(model.inputs(), input.name);
    if (!expected) {
      raise_request(StatusCode::kInvalidArgument,
                    cat("'", input.name, "' is not an input of model '", model.name(),
                        "' (inputs: ", quoted_names(model.inputs()), ")"));
    }
    if (!seen.insert(input.name).second) {
      raise_request(StatusCode::kInvalidArgument, cat("input '", input.name, "' is given twice"));
    }
    if (expected->type != input.type) {
      raise_request(
          StatusCode::kInvalidArgument,
          cat("input '", input.name, "' of model '", model.name(), "' is ",
              datatype_name(expected->type), ", the request gives ", datatype_name(input.type)));
    }
  }
  for (const std::string& output : request.requested_outputs) {
    if (!find_tensor(model.outputs(), output)) {
      raise_request(StatusCode::kInvalidArgument,
                    cat("'", output, "' is not an output of model '", model.name(),
                        "' (outputs: ", quoted_names(model.outputs()), ")"));
    }
  }
}

// What a chunk's failure tells the client: the runtime's input errors are the client's.
std::pair<StatusCode, std::string> describe_failure(const std::exception_ptr& error,
                                                    const std::string& model) {
  try {
    std::rethrow_exception(error);
  } catch (const RequestError& e) {
    return {e.code(), e.what()};
  } catch (const Error& e) {
    StatusCode code = StatusCode::kInternal;
    switch (e.kind()) {
      case ErrorKind::kInvalidInput:
      case ErrorKind::kUnsupported:
        code = StatusCode::kInvalidArgument;
        break;
      case ErrorKind::kOverloaded:
      case ErrorKind::kCancelled:
        code = StatusCode::kUnavailable;
        break;
      default:
        break;
    }
    return {code, cat("model '", model, "': ", e.what())};
  } catch (const std::bad_alloc&) {
    return {StatusCode::kResourceExhausted, cat("model '", model, "': out of memory")};
  } catch (const std::exception& e) {
    return {StatusCode::kInternal, cat("model '", model, "': ", e.what())};
  }
}

}  // namespace

InferenceService::InferenceService(std::vector<ModelSpec> specs, const ServiceOptions& options)
    : options_(options),
      metrics_(names_of(specs)),
      sequences_(options.max_sequences, options.sequence_idle_timeout),
      queue_(options.threads, options.max_queue) {
  std::set<std::string> names;
  for (ModelSpec& spec : specs) {
    if (!names.insert(spec.name).second) {
      raise_invalid_input(cat("--model: two models are named '", spec.name, "'"));
    }
    models_.push_back(std::make_unique<ServedModel>(std::move(spec)));
  }
  metrics_.active_sequences = [this](const std::string& model) { return sequences_.active(model); };
  metrics_.queued_requests = [this] { return queue_.queued(); };
  metrics_.requests_in_flight = [this] { return in_flight_.load(); };
  metrics_.batch_sizes = [this](const std::string& model) {
    const ServedModel* served = find(model);
    return served && served->ready() ? served->backend().batch_sizes() : std::vector<uint64_t>{};
  };
  reaper_ = std::thread([this] { expire_idle_sequences(); });
}

InferenceService::~InferenceService() { drain(); }

void InferenceService::load_models(const std::string& target, const std::string& cache_dir) {
  for (const auto& model : models_) {
    try {
      model->load(target, cache_dir, options_.max_queue, options_.threads);
    } catch (const Error& e) {
      raise(e.kind(), cat("model '", model->name(), "' (", model->spec().path, "): ", e.what()));
    }
  }
}

bool InferenceService::ready() const {
  if (!accepting_.load()) return false;
  return std::all_of(models_.begin(), models_.end(), [](const auto& m) { return m->ready(); });
}

const ServedModel* InferenceService::find(const std::string& name) const {
  for (const auto& model : models_) {
    if (model->name() == name) return model.get();
  }
  return nullptr;
}

std::string InferenceService::model_names() const {
  std::string list;
  for (const auto& model : models_) list += (list.empty() ? "'" : ", '") + model->name() + "'";
  return list;
}

void InferenceService::infer(InferRequest request, InferDone done) {
  const Clock::time_point arrival = Clock::now();
  const std::string model_name = request.model_name;
  // Every outcome is counted once, whichever thread reports it.
  in_flight_.fetch_add(1);
  InferDone counted = [this, arrival, model_name, done = std::move(done)](
                          StatusCode code, const std::string& error, InferResponse response) {
    const auto latency =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - arrival);
    metrics_.record(model_name, code, static_cast<uint64_t>(latency.count()));
    done(code, error, std::move(response));
    if (in_flight_.fetch_sub(1) == 1) {
      std::lock_guard<std::mutex> lock(answered_mutex_);
      answered_.notify_all();
    }
  };
  if (!accepting_.load()) {
    counted(StatusCode::kUnavailable, "the server is shutting down", {});
    return;
  }
  auto job =
      std::make_shared<std::pair<InferRequest, InferDone>>(std::move(request), std::move(counted));
  if (!queue_.try_submit([this, job] { run(job->first, job->second); })) {
    job->second(StatusCode::kUnavailable,
                cat("the server's request queue is full (", options_.max_queue,
                    " requests, --max-queue): retry later"),
                {});
  }
}

void InferenceService::run(InferRequest& request, InferDone& done) {
  std::shared_ptr<SequenceTable::Sequence> sequence;
  try {
    if (request.is_cancelled && request.is_cancelled()) {
      raise_request(StatusCode::kCancelled, "the client cancelled the request");
    }
    if (Clock::now() > request.deadline) {
      raise_request(StatusCode::kDeadlineExceeded,
                    "the request's deadline passed while it waited for an inference thread");
    }
    const ServedModel* model = &ready_model(*this, request.model_name, "");
    check_request(*model, request);

    std::shared_ptr<SequenceStream> stream;
    if (!request.sequence.id.empty()) {
      sequence = sequences_.acquire(model->name(), request.sequence, model->backend());
      // The table owns the stream; the sequence (held until release) keeps it alive.
      stream = std::shared_ptr<SequenceStream>(sequence, sequence->stream.get());
    } else {
      stream = model->backend().open();
    }
    InferResponse response;
    response.model_name = model->name();
    response.id = request.id;
    response.sequence = request.sequence;
    std::vector<std::string> wanted = request.requested_outputs;
    stream->submit(std::move(request.inputs),
                   [this, stream, sequence, wanted = std::move(wanted),
                    response = std::move(response), control = request.sequence,
                    done](std::exception_ptr error, std::vector<HostTensor> outputs) mutable {
                     if (sequence)
                       sequences_.release(response.model_name, control, sequence,
                                          !error && control.end);
                     if (error) {
                       auto [code, message] = describe_failure(error, response.model_name);
                       done(code, message, {});
                       return;
                     }
                     for (HostTensor& output : outputs) {
                       if (wanted.empty() ||
                           std::find(wanted.begin(), wanted.end(), output.name) != wanted.end()) {
                         response.outputs.push_back(std::move(output));
                       }
                     }
                     done(StatusCode::kOk, "", std::move(response));
                   });
  } catch (...) {
    if (sequence) sequences_.release(request.model_name, request.sequence, sequence, false);
    auto [code, message] = describe_failure(std::current_exception(), request.model_name);
    done(code, message, {});
  }
}

void InferenceService::stop_accepting() { accepting_.store(false); }

bool InferenceService::wait_until_answered(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(answered_mutex_);
  return answered_.wait_until(lock, deadline, [this] { return in_flight_.load() == 0; });
}

void InferenceService::drain() {
  accepting_.store(false);
  queue_.drain();
  {
    std::lock_guard<std::mutex> lock(reaper_mutex_);
    reaper_stop_ = true;
  }
  reaper_wake_.notify_all();
  if (reaper_.joinable()) reaper_.join();
}

void InferenceService::expire_idle_sequences() {
  const auto period = std::clamp(options_.sequence_idle_timeout / 4, std::chrono::milliseconds(10),
                                 std::chrono::milliseconds(1000));
  std::unique_lock<std::mutex> lock(reaper_mutex_);
  while (!reaper_wake_.wait_for(lock, period, [this] { return reaper_stop_; })) {
    sequences_.expire_idle(Clock::now());
  }
}

}  // namespace rnnc::serve
