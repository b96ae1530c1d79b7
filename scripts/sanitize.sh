#!/usr/bin/env bash
# Builds the whole test suite with sanitizers and runs it through ctest.
#   scripts/sanitize.sh [address|thread]
#     address (default): AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer, build-asan,
#                        every ctest test except the exclusions below.
#     thread:            ThreadSanitizer, build-tsan, only the tests whose name matches TSAN_TESTS
#                        (the whole suite under TSan is too slow). ctest runs with
#                        --no-tests=error, so when no test matches it fails loudly ("No tests were
#                        found") instead of passing with nothing run.
# Any sanitizer report fails its test: ASan/UBSan halt on the first error and LSan reports leaks
# at exit. Third-party libraries (ONNX Runtime, Halide/LLVM, protobuf, oneTBB) are prebuilt and
# not instrumented; the few reports they cause are suppressed in scripts/sanitizer-suppressions/,
# one reason per entry, and rnnc's own code is never suppressed. The Halide kernels rnnc compiles
# at run time (lowering/halide_cache.cc) are built by Halide, not by this build, so they are not
# instrumented either; they go to BUILD_DIR/kernel_cache rather than ~/.cache/rnnc.
# Not run: runtime_allocation_test (tests/CMakeLists.txt builds it only without RNNC_SANITIZE: it
# interposes malloc, which the sanitizers' allocator owns).
# Thread mode: Debian's libtbb is not instrumented, so TSan cannot see the ordering oneTBB's
# scheduler provides. rnnc states it at each of its own hand-offs (runtime/tsan.h: every functor
# given to oneTBB is a HandOff, and each join acquires what the work released, oneTBB's last
# accesses included), so a race on rnnc's data is reported and fails the run; races on oneTBB's
# own task objects are suppressed in tsan.supp by their innermost frame. What the run cannot
# check is oneTBB's own synchronization: that needs a TSan-built oneTBB.
# Environment: BUILD_DIR (default build-asan / build-tsan), JOBS (default 2), CC/CXX (compiler),
# TSAN_TESTS (ctest -R regex for thread mode, default
# '[Cc]oncurren|[Tt]hread|[Pp]arallel|PlanChooser|AutoPlan|StreamBatcher|InferenceService').
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=${1:-address}
jobs=${JOBS:-2}
supp=$root/scripts/sanitizer-suppressions

case "$mode" in
  address) sanitize=address,undefined; build=${BUILD_DIR:-$root/build-asan} ;;
  thread) sanitize=thread; build=${BUILD_DIR:-$root/build-tsan} ;;
  *) echo "usage: scripts/sanitize.sh [address|thread]" >&2; exit 2 ;;
esac

# Tests left out of the address run, each a ctest name (regex) with its reason. The ONNX Runtime
# worker (conformance_*_ort) and bench_smoke do run under ASan, ONNX Runtime's own leaks
# suppressed. The ones below load the instrumented librnnc into a program built or run outside this
# build (the installed package's C++ and C examples, compiled without the sanitizers; Debian's
# python3 importing the rnnc module), which ASan refuses to start ("ASan runtime does not come
# first"); scripts/test.sh runs them.
excluded=(
  install_prefix_use  # the installed prefix used from CMake, pkg-config and Python
  package_deb_use     # the same from the unpacked .deb
  serve               # serve_test.py imports the rnnc Python module to check the server's outputs
)

"$root/scripts/setup.sh" >/dev/null
# The same ONNX Runtime and Silero model as scripts/test.sh, so the same tests are registered.
ort=$("$root/scripts/install-onnxruntime.sh" --quiet)

# The sanitizer settings hold for the build too: it runs the instrumented `rnnc compile` to make
# the AOT examples' libraries, and Halide's leaks at its exit are suppressed there as under ctest.
export RNNC_CACHE_DIR=$build/kernel_cache
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp
export LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp

start=$SECONDS
nice -n 10 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DRNNC_SANITIZE="$sanitize" -DRNNC_ONNXRUNTIME_DIR="$ort" >/dev/null
nice -n 10 cmake --build "$build" -j "$jobs"
build_seconds=$((SECONDS - start))
"$root/models/fetch_silero.sh" "$build/models" 2>/dev/null


filter=()
if [[ $mode == thread ]]; then
  tsan_tests=${TSAN_TESTS:-[Cc]oncurren|[Tt]hread|[Pp]arallel|PlanChooser|AutoPlan|StreamBatcher|InferenceService}
  filter=(-R "$tsan_tests")
  # The listing first: grep -q stops reading at its first match, and under pipefail the listing
  # ctest then fails to write would count as no match.
  listing=$(ctest --test-dir "$build" -N "${filter[@]}")
  if ! grep -q "^ *Test *#" <<<"$listing"; then
    echo "sanitize: no tests matched TSAN_TESTS='$tsan_tests'; nothing to run under" \
      "ThreadSanitizer (ctest fails below with --no-tests=error)" >&2
  fi
elif [[ ${#excluded[@]} -gt 0 ]]; then
  filter=(-E "^($(IFS='|'; echo "${excluded[*]}"))\$")
fi

start=$SECONDS
status=0
nice -n 10 ctest --test-dir "$build" --output-on-failure --no-tests=error -j "$jobs" \
  "${filter[@]}" || status=$?
echo "sanitize ($sanitize): build ${build_seconds}s, tests $((SECONDS - start))s" >&2
exit "$status"
