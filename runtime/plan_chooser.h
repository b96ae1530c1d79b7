// PlanChooser: the kAuto plan of a threaded model, chosen per input shape from measured run times.
//
// Which plan wins depends on the shape of a run, not only on the model: on this 2-core host the
// pipeline plan ran a 4-layer h128 LSTM at seq 17 batch 1 0.93x as fast as the sequential plan,
// and the same model at seq 100 1.75x, at batch 16 1.50x as fast (docs/benchmarks.md). A
// decision taken once at load on one nominal shape was wrong for those shapes. So a model loaded
// with kAuto and threads > 1 keeps both executors, and each shape bucket learns which is faster:
//
//   - the first run of each plan on a bucket warms it (workspaces grow) and is not counted;
//   - then the plans alternate until each has kSamples timed runs, and the bucket runs the plan
//     with the lower estimate: the lower quartile of its last kWindow run times;
//   - every run is timed (two clock reads), and every kExploreEvery runs the other plan runs
//     twice (the first to bring its weights back into the caches, not counted), so a choice
//     made under a burst of load, or overtaken by a change in the machine's load, is revised.
//
// Why the lower quartile: preemption on a shared machine only ever adds time. Single runs of
// one plan and shape spread from 2.8 to 13.5 ms on this host while the fastest few stayed within
// 15%; medians of a few runs were a coin toss between the plans, the fast end was not. The
// quartile rather than the minimum, so one lucky run does not decide.
//
// A shape bucket is the run's bound symbolic dims (Session's per-symbol values), each exact up to
// 32 and rounded up to a power of two above (seq 100 and 120 share a bucket; 17 and 20 do not).
// At most kMaxBuckets buckets are tracked; a run of an untracked shape uses the sequential plan.
//
// Thread-safe: sessions of one model on different threads share its chooser (one mutex, held
// for a map lookup per run and one per recorded time).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace rnnc {

class PlanChooser {
 public:
  static constexpr int kSequential = 0;  // candidate indices
  static constexpr int kOverlapping = 1;
  static constexpr int kSamples = 5;     // timed runs per plan before the first choice
  static constexpr size_t kWindow = 16;  // run times kept per plan
  static constexpr int64_t kExploreEvery = 64;
  static constexpr size_t kMaxBuckets = 1024;

  // The bucket of a run's bound symbol values, written into `key` (reused: no allocation once
  // its capacity suffices).
  static void bucket(const std::vector<int64_t>& bound, std::vector<int64_t>& key);

  struct Pick {
    int candidate = kSequential;
    bool timed = false;  // time the run and record() it
  };
  // The plan the next run of bucket `key` uses.
  Pick pick(const std::vector<int64_t>& key);
  // A timed run's wall time.
  void record(const std::vector<int64_t>& key, int candidate, double us);

  // One line per bucket with a choice ("  seq=17, batch=1: pipeline (lower quartile of the
  // last 16 runs 120 us vs sequential 180 us)"), symbols named in `symbols` order and the
  // overlapping plan called `overlapping_name`.
  std::string report(const std::vector<std::string>& symbols,
                     const std::string& overlapping_name) const;

 private:
  struct Entry {
    bool warmed[2] = {false, false};
    std::vector<double> times[2];  // the last kWindow timed runs, per candidate (ring)
    size_t oldest[2] = {0, 0};     // ring position of the oldest time once full
    int chosen = -1;               // -1 until both have kSamples times
    int64_t runs = 0;              // runs picked since the first choice
  };
  static double estimate(const std::vector<double>& times);
  void choose(Entry& entry) const;

  mutable std::mutex mutex_;
  std::map<std::vector<int64_t>, Entry> entries_;
};

}  // namespace rnnc
