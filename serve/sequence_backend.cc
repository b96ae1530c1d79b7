#include "serve/sequence_backend.h"

#include <mutex>
#include <optional>

namespace rnnc::serve {

namespace {

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

 private:
  std::shared_ptr<const CompiledModel> model_;
  std::vector<std::pair<std::string, std::string>> state_;
  std::mutex mutex_;
  std::vector<Session> idle_;
};

class SessionStream : public SequenceStream {
 public:
  explicit SessionStream(std::shared_ptr<SessionPool> pool)
      : pool_(std::move(pool)), session_(pool_->take()) {}
  ~SessionStream() override { pool_->give_back(std::move(*session_)); }

  void submit(std::vector<HostTensor> inputs, ChunkDone done) override {
    ChunkResult result;
    try {
      std::vector<NamedTensor> views;
      views.reserve(inputs.size());
      for (const HostTensor& input : inputs) views.push_back(input.view());
      std::lock_guard<std::mutex> lock(mutex_);
      for (const NamedTensor& output : session_->run(views)) {
        result.outputs.push_back(HostTensor::copy_of(output));
      }
    } catch (...) {
      done(std::current_exception(), {});
      return;
    }
    done(nullptr, std::move(result));
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

  std::unique_ptr<SequenceStream> open() override {
    return std::make_unique<SessionStream>(pool_);
  }

 private:
  std::shared_ptr<SessionPool> pool_;
};

}  // namespace

std::unique_ptr<SequenceBackend> make_session_backend(
    std::shared_ptr<const CompiledModel> model,
    std::vector<std::pair<std::string, std::string>> state) {
  return std::make_unique<SessionBackend>(std::move(model), std::move(state));
}

}  // namespace rnnc::serve
