// Hand-offs across oneTBB made visible to ThreadSanitizer (scripts/sanitize.sh thread). Debian's
// oneTBB is not instrumented, so TSan cannot see that oneTBB orders a task's creation before its
// execution, and its completion before the wait that joins it. rnnc states both itself:
//
//   HandOff  wraps every functor rnnc gives to oneTBB. Creating it, or any copy, releases the
//            copy's address once written; every read of it (a copy, or a call) first acquires
//            the address it reads. So no thread reads a capture before an acquire that TSan
//            pairs with the capture's write.
//   done     the address a call releases when it returns; the spawner acquires it after the
//            join (task_arena::execute returning, task_group::wait, graph::wait_for_all).
//
// oneTBB must hold a HandOff by reference (task_arena::execute; task_group::run of a
// std::cref, parallel_indices.h) or in memory from operator new (a continue_node's body), never
// copy it into its own task objects: its allocator recycles those between threads with
// synchronization TSan does not see either, so the next task's write there would race with this
// one's reads, and no frame of that report would be oneTBB's to suppress.
//
// RNNC_TSAN_RELEASE / RNNC_TSAN_ACQUIRE mark the joins and a flow graph's edges. All of it is a
// no-op in other builds, where a HandOff is its functor plus one pointer.
#pragma once

#include <utility>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define RNNC_TSAN_RELEASE(address) __tsan_release(const_cast<void*>(static_cast<const void*>(address)))
#define RNNC_TSAN_ACQUIRE(address) __tsan_acquire(const_cast<void*>(static_cast<const void*>(address)))
#else
#define RNNC_TSAN_RELEASE(address) ((void)(address))
#define RNNC_TSAN_ACQUIRE(address) ((void)(address))
#endif

namespace rnnc {

// Acquires every word of `object`: for a oneTBB object whose atomics (at offsets oneTBB keeps
// private) workers release last, e.g. a flow graph's wait count.
template <typename T>
void tsan_acquire_words([[maybe_unused]] const T& object) {
#if defined(__SANITIZE_THREAD__)
  const char* begin = reinterpret_cast<const char*>(&object);
  for (const char* word = begin; word < begin + sizeof(T); word += sizeof(void*)) {
    RNNC_TSAN_ACQUIRE(word);
  }
#endif
}

template <typename Fn>
class HandOff {
 public:
  HandOff(Fn fn, const void* done) : fn_(std::move(fn)), done_(done) { RNNC_TSAN_RELEASE(this); }
  HandOff(const HandOff& other) : fn_(acquired(other).fn_), done_(other.done_) {
    RNNC_TSAN_RELEASE(this);
  }
  HandOff& operator=(const HandOff&) = delete;

  template <typename... Args>
  void operator()(Args&&... args) const {
    RNNC_TSAN_ACQUIRE(this);
    fn_(std::forward<Args>(args)...);
    RNNC_TSAN_RELEASE(done_);
  }

 private:
  static const HandOff& acquired(const HandOff& source) {
    RNNC_TSAN_ACQUIRE(&source);
    return source;
  }

  Fn fn_;
  const void* done_;
};

// hand_off(fn, &x): fn wrapped for oneTBB; the spawner acquires &x after the join.
template <typename Fn>
HandOff<Fn> hand_off(Fn fn, const void* done) {
  return HandOff<Fn>(std::move(fn), done);
}

}  // namespace rnnc
