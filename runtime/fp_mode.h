// The floating-point mode rnnc's kernels run in: flush-to-zero and denormals-are-zero (the FTZ
// and DAZ bits of x86's MXCSR) unless ModelOptions::flush_denormals is off.
//
// Why: a subnormal float operand or result takes a microcode assist on Intel cores, about 100+
// cycles instead of one. Models produce them (Silero VAD's weights and states hold values near
// 1e-39), and a kernel that meets them slows down several times (docs/runtime.md). Flushing changes only values below 1.2e-38, which no
// tolerance here distinguishes from 0; the reference evaluator keeps IEEE semantics.
//
// MXCSR is per thread, so the mode is set where rnnc code starts running on a thread and the
// thread's previous mode is restored when it leaves: Executor::run (the caller's thread or the
// arena thread that runs the plan), every flow-graph block, and each task of parallel_indices
// (which carries the starting thread's mode to the helpers), so an application's own threads and
// oneTBB's shared workers keep their modes outside rnnc.
#pragma once

#include <xmmintrin.h>

namespace rnnc {

constexpr unsigned kFlushDenormalBits = 0x8040;  // FTZ (bit 15) | DAZ (bit 6)

class ScopedFpMode {
 public:
  explicit ScopedFpMode(unsigned mode) : saved_(_mm_getcsr()) {
    if (mode != saved_) _mm_setcsr(mode);
  }
  ~ScopedFpMode() {
    if (_mm_getcsr() != saved_) _mm_setcsr(saved_);
  }
  ScopedFpMode(const ScopedFpMode&) = delete;
  ScopedFpMode& operator=(const ScopedFpMode&) = delete;

  // The mode a run uses: the current thread's, with FTZ and DAZ set or cleared.
  static unsigned run_mode(bool flush_denormals) {
    const unsigned current = _mm_getcsr();
    return flush_denormals ? current | kFlushDenormalBits : current & ~kFlushDenormalBits;
  }
  static unsigned current() { return _mm_getcsr(); }

 private:
  unsigned saved_;
};

}  // namespace rnnc
