// The sequences the server holds state for (Triton's sequence extension), across models: each
// (model, sequence_id) has its own SequenceStream. A sequence starts with sequence_start, ends
// after its sequence_end request or when idle longer than the idle timeout; at most
// max_sequences exist at once. A request never touches another sequence's state.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "serve/sequence_backend.h"
#include "serve/tensor.h"

namespace rnnc::serve {

class SequenceTable {
 public:
  SequenceTable(size_t max_sequences, std::chrono::milliseconds idle_timeout);

  struct Sequence {
    std::unique_ptr<SequenceStream> stream;
    Clock::time_point last_used;
    int in_flight = 0;  // chunks submitted and not done: never expired meanwhile
  };

  // The sequence `control` names on `model`, opened from `backend` when control.start (a start
  // for a live sequence restarts it from zeros). RequestError: RESOURCE_EXHAUSTED when
  // max_sequences are live; INVALID_ARGUMENT naming the id when it was never started, has ended
  // or was dropped after its idle timeout. The caller calls release() when the chunk is done.
  std::shared_ptr<Sequence> acquire(const std::string& model, const SequenceControl& control,
                                    SequenceBackend& backend);
  // The chunk is done; with `end`, the sequence ends (its state is dropped).
  void release(const std::string& model, const SequenceControl& control,
               const std::shared_ptr<Sequence>& sequence, bool end);

  // Drops sequences idle longer than the timeout; returns how many.
  size_t expire_idle(Clock::time_point now);
  size_t active(const std::string& model) const;
  size_t active() const;
  std::chrono::milliseconds idle_timeout() const { return idle_timeout_; }

 private:
  using Key = std::pair<std::string, std::string>;  // (model, sequence id)
  void remember_closed(const Key& key, const char* why);

  const size_t max_sequences_;
  const std::chrono::milliseconds idle_timeout_;
  mutable std::mutex mutex_;
  std::map<Key, std::shared_ptr<Sequence>> live_;
  // Recently closed sequences and why, so a late request hears "ended" rather than "unknown".
  std::map<Key, const char*> closed_;
  std::deque<Key> closed_order_;
};

}  // namespace rnnc::serve
