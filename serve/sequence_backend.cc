#include "serve/sequence_backend.h"

#include <atomic>
#include <mutex>
#include <optional>

namespace rnnc::serve {

namespace {

std::vector<NamedTensor> views_of(const std::vector<HostTensor>& tensors) {
  std::vector<NamedTensor> views;
  views.reserve(tensors.size());
  for (const HostTensor& tensor : tensors) views.push_back(tensor.view());
  return views;
}

class SessionPool {
 public:
  SessionPool(std::shared_ptr<const CompiledModel> model,
              std::vector<std::pair<std::string, std::string>> state)
      : model_(std::move(model)), state_(std::move(state)) {}

  Session take() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!idle_.empty()) {
        Session session = std::move(idle_.back());
        idle_.pop_back();
        return session;
      }
    }
    return model_->new_session(state_);
  }

  void give_back(Session session) {
    session.reset();
    std::lock_guard<std::mutex> lock(mutex_);
    idle_.push_back(std::move(session));
  }

  void count_run() { runs_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t runs() const { return runs_.load(std::memory_order_relaxed); }

 private:
  std::shared_ptr<const CompiledModel> model_;
  std::vector<std::pair<std::string, std::string>> state_;
  std::mutex mutex_;
  std::vector<Session> idle_;
  std::atomic<uint64_t> runs_{0};
};

class SessionStream : public SequenceStream {
 public:
  explicit SessionStream(std::shared_ptr<SessionPool> pool)
      : pool_(std::move(pool)), session_(pool_->take()) {}
  ~SessionStream() override { pool_->give_back(std::move(*session_)); }

  void submit(std::vector<HostTensor> inputs, ChunkDone done) override {
    std::vector<HostTensor> outputs;
    try {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const NamedTensor& output : session_->run(views_of(inputs))) {
        outputs.push_back(HostTensor::copy_of(output));
      }
      pool_->count_run();
    } catch (...) {
      done(std::current_exception(), {});
      return;
    }
    done(nullptr, std::move(outputs));
  }

 private:
  std::shared_ptr<SessionPool> pool_;
  std::optional<Session> session_;
  std::mutex mutex_;  // one chunk at a time
};

class SessionBackend : public SequenceBackend {
 public:
  SessionBackend(std::shared_ptr<const CompiledModel> model,
                 std::vector<std::pair<std::string, std::string>> state)
      : pool_(std::make_shared<SessionPool>(std::move(model), std::move(state))) {}

  std::unique_ptr<SequenceStream> open() override { return std::make_unique<SessionStream>(pool_); }

  std::vector<uint64_t> batch_sizes() const override { return {0, pool_->runs()}; }

 private:
  std::shared_ptr<SessionPool> pool_;
};

class BatcherStream : public SequenceStream {
 public:
  explicit BatcherStream(BatchStream stream) : stream_(std::move(stream)) {}

  void submit(std::vector<HostTensor> inputs, ChunkDone done) override {
    try {
      // The batcher copies the inputs during the call.
      stream_.submit(views_of(inputs), [done](rnnc::ChunkResult result) {
        if (result.error) {
          done(std::make_exception_ptr(*result.error), {});
          return;
        }
        std::vector<HostTensor> outputs;
        for (const CompiledModel::Output& output : result.outputs) {
          outputs.push_back(HostTensor::copy_of(
              {output.name, {output.type, output.shape, const_cast<void*>(output.data())}}));
        }
        done(nullptr, std::move(outputs));
      });
    } catch (...) {
      done(std::current_exception(), {});
    }
  }

 private:
  BatchStream stream_;
};

class BatcherBackend : public SequenceBackend {
 public:
  BatcherBackend(std::shared_ptr<const CompiledModel> model, const BatcherOptions& options)
      : batcher_(std::move(model), options) {}

  std::unique_ptr<SequenceStream> open() override {
    return std::make_unique<BatcherStream>(batcher_.open_stream());
  }

  std::vector<uint64_t> batch_sizes() const override { return batcher_.stats().batch_sizes; }

 private:
  StreamBatcher batcher_;
};

}  // namespace

std::unique_ptr<SequenceBackend> make_session_backend(
    std::shared_ptr<const CompiledModel> model,
    std::vector<std::pair<std::string, std::string>> state) {
  return std::make_unique<SessionBackend>(std::move(model), std::move(state));
}

}  // namespace rnnc::serve

namespace rnnc::serve {

std::unique_ptr<SequenceBackend> make_batcher_backend(std::shared_ptr<const CompiledModel> model,
                                                      const BatcherOptions& options) {
  return std::make_unique<BatcherBackend>(std::move(model), options);
}

}  // namespace rnnc::serve
