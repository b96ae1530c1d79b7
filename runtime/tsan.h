// Hand-off annotations for ThreadSanitizer builds (scripts/sanitize.sh thread). Debian's oneTBB
// is not instrumented, so TSan cannot see that TBB orders a task's creation before its execution
// (task_arena::execute, task_group::run/wait, parallel_for, flow-graph try_put/wait_for_all).
// The executor marks each hand-off itself: RNNC_TSAN_RELEASE(x) where work is handed to another
// thread or handed back, RNNC_TSAN_ACQUIRE(x) where it is picked up. No-ops in other builds.
#pragma once

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define RNNC_TSAN_RELEASE(address) __tsan_release(const_cast<void*>(static_cast<const void*>(address)))
#define RNNC_TSAN_ACQUIRE(address) __tsan_acquire(const_cast<void*>(static_cast<const void*>(address)))
#else
#define RNNC_TSAN_RELEASE(address) ((void)0)
#define RNNC_TSAN_ACQUIRE(address) ((void)0)
#endif
