#include "serve/served_model.h"

#include <chrono>
#include <cstdlib>
#include <future>

#include "ir/error.h"
#include "serve/tensor.h"

namespace rnnc::serve {

namespace {

std::vector<TensorMetadata> metadata_of(const std::vector<TensorInfo>& tensors) {
  std::vector<TensorMetadata> out;
  for (const TensorInfo& info : tensors) {
    TensorMetadata tensor{info.name, info.type, {}};
    for (const std::string& dim : info.dims) {
      const bool numeric = !dim.empty() && dim.find_first_not_of("0123456789") == std::string::npos;
      tensor.shape.push_back(numeric ? std::strtoll(dim.c_str(), nullptr, 10) : -1);
    }
    out.push_back(std::move(tensor));
  }
  return out;
}

}  // namespace

ServedModel::ServedModel(ModelSpec spec) : spec_(std::move(spec)) {}

void ServedModel::load(const std::string& target, const std::string& cache_dir, size_t max_queue,
                       int threads) {
  const auto start = std::chrono::steady_clock::now();
  ModelOptions options = spec_.options;
  options.target = target;
  options.cache_dir = cache_dir;
  model_ = CompiledModel::load(spec_.path, options);
  inputs_ = metadata_of(model_->inputs());
  outputs_ = metadata_of(model_->outputs());
  carried_state_ = spec_.state;
  for (const auto& pair : model_->recurrent_state()) carried_state_.push_back(pair);
  for (const auto& [output, input] : spec_.state) {
    bool has_output = false, has_input = false;
    for (const TensorMetadata& t : outputs_) has_output |= t.name == output;
    for (const TensorMetadata& t : inputs_) has_input |= t.name == input;
    if (!has_output || !has_input) {
      raise_invalid_input(cat("--model '", spec_.name, "' state=", output, ":", input, ": '",
                              has_output ? input : output, "' is not an ",
                              has_output ? "input" : "output", " of the model"));
    }
  }
  if (spec_.batching) {
    BatcherOptions batching;
    batching.max_batch = spec_.max_batch;
    batching.max_wait_us = spec_.max_wait_us;
    batching.queue_capacity = max_queue;
    batching.threads = threads;
    batching.state = spec_.state;
    batching.batch_axes = spec_.batch_axes;
    backend_ = make_batcher_backend(model_, batching);
  } else {
    backend_ = make_session_backend(model_, spec_.state);
  }
  warm_up();
  load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ready_.store(true, std::memory_order_release);
}

void ServedModel::warm_up() {
  std::vector<HostTensor> zeros;
  for (const TensorMetadata& input : inputs_) {
    bool carried = false;
    for (const auto& pair : carried_state_) carried |= pair.second == input.name;
    if (carried) continue;  // the session feeds zeros shaped by the other inputs
    HostTensor tensor;
    tensor.name = input.name;
    tensor.type = input.type;
    const std::vector<std::string>& dims =
        model_->inputs()[static_cast<size_t>(&input - inputs_.data())].dims;
    for (size_t k = 0; k < input.shape.size(); ++k) {
      if (input.shape[k] >= 0) {
        tensor.shape.push_back(input.shape[k]);
      } else if (auto it = spec_.dims.find(dims[k]); it != spec_.dims.end()) {
        tensor.shape.push_back(it->second);
      } else {
        return;  // a size only requests will tell
      }
    }
    int64_t elements = 1;
    for (int64_t d : tensor.shape) elements *= d;
    tensor.resize_bytes(static_cast<size_t>(elements) * element_size(tensor.type));
    zeros.push_back(std::move(tensor));
  }
  std::unique_ptr<SequenceStream> stream = backend_->open();
  std::promise<void> finished;
  stream->submit(std::move(zeros), [&](std::exception_ptr error, std::vector<HostTensor>) {
    if (error)
      finished.set_exception(error);
    else
      finished.set_value();
  });
  finished.get_future().get();
  warmed_up_ = true;
}

}  // namespace rnnc::serve
