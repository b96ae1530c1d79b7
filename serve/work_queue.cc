#include "serve/work_queue.h"

namespace rnnc::serve {

WorkQueue::WorkQueue(int threads, size_t capacity) : capacity_(capacity) {
  for (int k = 0; k < threads; ++k) workers_.emplace_back([this] { work(); });
}

WorkQueue::~WorkQueue() { drain(); }

bool WorkQueue::try_submit(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (draining_ || jobs_.size() >= capacity_) return false;
    jobs_.push_back(std::move(job));
  }
  ready_.notify_one();
  return true;
}

void WorkQueue::drain() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    draining_ = true;
  }
  ready_.notify_all();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
}

size_t WorkQueue::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return jobs_.size();
}

void WorkQueue::work() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_.wait(lock, [this] { return draining_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // draining and nothing left
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace rnnc::serve
