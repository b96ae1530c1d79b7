#include "serve/sequence_table.h"

#include "ir/error.h"
#include "serve/status.h"

namespace rnnc::serve {

namespace {

constexpr size_t kClosedRemembered = 4096;

}  // namespace

SequenceTable::SequenceTable(size_t max_sequences, std::chrono::milliseconds idle_timeout)
    : max_sequences_(max_sequences), idle_timeout_(idle_timeout) {}

void SequenceTable::remember_closed(const Key& key, const char* why) {
  if (closed_.emplace(key, why).second) {
    closed_order_.push_back(key);
  } else {
    closed_[key] = why;
  }
  while (closed_order_.size() > kClosedRemembered) {
    closed_.erase(closed_order_.front());
    closed_order_.pop_front();
  }
}

std::shared_ptr<SequenceTable::Sequence> SequenceTable::acquire(const std::string& model,
                                                                const SequenceControl& control,
                                                                SequenceBackend& backend) {
  const Key key{model, control.id};
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = live_.find(key);
  if (control.start) {
    auto check_room = [&] {
      if (it == live_.end() && live_.size() >= max_sequences_) {
        raise_request(
            StatusCode::kResourceExhausted,
            cat("cannot start sequence ", control.id, " of model '", model, "': the server holds ",
                max_sequences_, " sequences, its limit (--max-sequences)"));
      }
    };
    check_room();
    // Open outside the lock: a backend may allocate.
    lock.unlock();
    auto sequence = std::make_shared<Sequence>();
    sequence->stream = backend.open();
    lock.lock();
    it = live_.find(key);
    check_room();  // others may have started meanwhile
    closed_.erase(key);
    sequence->last_used = Clock::now();
    sequence->in_flight = 1;
    live_[key] = sequence;
    return sequence;
  }
  if (it == live_.end()) {
    auto closed = closed_.find(key);
    raise_request(StatusCode::kInvalidArgument,
                  closed == closed_.end()
                      ? cat("sequence ", control.id, " of model '", model,
                            "' was never started (send sequence_start=true first)")
                      : cat("sequence ", control.id, " of model '", model, "' ", closed->second,
                            " (start it again with sequence_start=true)"));
  }
  it->second->last_used = Clock::now();
  ++it->second->in_flight;
  return it->second;
}

void SequenceTable::release(const std::string& model, const SequenceControl& control,
                            const std::shared_ptr<Sequence>& sequence, bool end) {
  std::shared_ptr<Sequence> dropped;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(mutex_);
  --sequence->in_flight;
  sequence->last_used = Clock::now();
  if (!end) return;
  const Key key{model, control.id};
  auto it = live_.find(key);
  // A restart may have replaced the entry meanwhile: only the sequence itself ends.
  if (it != live_.end() && it->second == sequence) {
    dropped = std::move(it->second);
    live_.erase(it);
    remember_closed(key, "has ended (its sequence_end request ran)");
  }
}

size_t SequenceTable::expire_idle(Clock::time_point now) {
  std::vector<std::shared_ptr<Sequence>> dropped;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = live_.begin(); it != live_.end();) {
    if (it->second->in_flight == 0 && now - it->second->last_used > idle_timeout_) {
      remember_closed(it->first, "was dropped after its idle timeout (--sequence-idle-timeout)");
      dropped.push_back(std::move(it->second));
      it = live_.erase(it);
    } else {
      ++it;
    }
  }
  return dropped.size();
}

size_t SequenceTable::active(const std::string& model) const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t count = 0;
  for (const auto& entry : live_) count += entry.first.first == model;
  return count;
}

size_t SequenceTable::active() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_.size();
}

}  // namespace rnnc::serve
