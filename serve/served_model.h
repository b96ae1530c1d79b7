// A model the server serves: its spec, the compiled model once loaded, its metadata in protocol
// terms and the backend its sequences run on.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "rnnc/rnnc.h"
#include "serve/model_spec.h"
#include "serve/sequence_backend.h"

namespace rnnc::serve {

struct TensorMetadata {
  std::string name;
  ElementType type = ElementType::kFloat32;
  std::vector<int64_t> shape;  // -1 for a symbolic dim
};

class ServedModel {
 public:
  explicit ServedModel(ModelSpec spec);

  // Compiles the model (kernels from the cache when it holds them) with the server-wide target
  // and cache directory, then runs it once on zeros when every input's shape is known (fixed in
  // the model or given with dim=), so the first request finds its shape's program compiled.
  // With batching, the batcher queues at most `max_queue` chunks and runs `threads` batches at
  // once. Throws rnnc::Error. Not thread-safe; ready() turns true at its end.
  void load(const std::string& target, const std::string& cache_dir, size_t max_queue, int threads);
  bool ready() const { return ready_.load(std::memory_order_acquire); }
  double load_seconds() const { return load_seconds_; }
  bool warmed_up() const { return warmed_up_; }

  const std::string& name() const { return spec_.name; }
  const ModelSpec& spec() const { return spec_; }
  // Valid once ready().
  const std::vector<TensorMetadata>& inputs() const { return inputs_; }
  const std::vector<TensorMetadata>& outputs() const { return outputs_; }
  // The state the server carries for a sequence, "OUT->IN" per pair (the model's own state given
  // with state=, then the recurrent state rnnc exposed).
  const std::vector<std::pair<std::string, std::string>>& carried_state() const {
    return carried_state_;
  }
  SequenceBackend& backend() const { return *backend_; }

 private:
  void warm_up();

  ModelSpec spec_;
  std::shared_ptr<const CompiledModel> model_;
  std::vector<TensorMetadata> inputs_, outputs_;
  std::vector<std::pair<std::string, std::string>> carried_state_;
  std::unique_ptr<SequenceBackend> backend_;
  std::atomic<bool> ready_{false};
  double load_seconds_ = 0;
  bool warmed_up_ = false;
};

}  // namespace rnnc::serve
