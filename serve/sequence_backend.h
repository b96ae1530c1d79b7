// How a served model runs the chunks of a sequence. Requests reach a model only through this
// interface, so a model runs either one Session per sequence (make_session_backend) or through
// the stream batcher, per model (ModelSpec::batching).
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rnnc/rnnc.h"
#include "serve/tensor.h"

namespace rnnc::serve {

// Called once per chunk, with the error (an rnnc::Error) or every model output, in the model's
// order.
using ChunkDone = std::function<void(std::exception_ptr error, std::vector<HostTensor> outputs)>;

// One sequence: carries its state from chunk to chunk, from zeros at the start.
class SequenceStream {
 public:
  virtual ~SequenceStream() = default;
  // Runs a chunk after every chunk submitted before it; `done` runs on this thread or on one the
  // backend owns. Inputs the model carries as state may be given explicitly: they override the
  // carried value for this chunk (the stateless form).
  virtual void submit(std::vector<HostTensor> inputs, ChunkDone done) = 0;
};

class SequenceBackend {
 public:
  virtual ~SequenceBackend() = default;
  virtual std::unique_ptr<SequenceStream> open() = 0;
  // [b]: the runs so far that ran b chunks together (index 0 unused).
  virtual std::vector<uint64_t> batch_sizes() const = 0;
};

// One rnnc::Session per open stream, run on the submitting thread. Sessions are pooled: a
// closed stream's session is reset and handed to the next one, so stateless requests (a stream
// of one chunk) do not allocate a session each.
std::unique_ptr<SequenceBackend> make_session_backend(
    std::shared_ptr<const CompiledModel> model,
    std::vector<std::pair<std::string, std::string>> state);

// Every stream a BatchStream of one rnnc::StreamBatcher: the chunks of different sequences that
// are ready together run as one batched run (within options' max_batch and max_wait_us), on the
// batcher's thread. A full batcher queue fails the chunk with ErrorKind::kOverloaded.
std::unique_ptr<SequenceBackend> make_batcher_backend(std::shared_ptr<const CompiledModel> model,
                                                      const BatcherOptions& options);

}  // namespace rnnc::serve
