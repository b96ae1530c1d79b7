// The inference threads: a fixed number of workers taking jobs from a bounded queue. A full
// queue refuses the job (the caller answers UNAVAILABLE / 503) instead of growing.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rnnc::serve {

class WorkQueue {
 public:
  WorkQueue(int threads, size_t capacity);
  ~WorkQueue();  // drain()

  // False when the queue holds `capacity` jobs or is draining.
  bool try_submit(std::function<void()> job);
  // Refuses new jobs, runs the queued ones to the end and joins the workers.
  void drain();
  size_t queued() const;

 private:
  void work();

  const size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  bool draining_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace rnnc::serve
