// PlanChooser: the kAuto plan of a threaded model, chosen per input shape from timed duels.
//
// Which plan wins depends on the shape of a run, not only on the model: on 2 cores the pipeline
// plan runs a 4-layer h128 LSTM at seq 17 batch 1 slower than the sequential plan and the same
// model at seq 100 or batch 16 much faster (docs/measurements.md, "Plans per shape"). A
// decision taken once at load on one nominal shape was wrong for those shapes. So a model loaded
// with kAuto and threads > 1 keeps both executors, and each shape bucket learns which is faster
// from duels: four runs back to back, each plan once untimed (its weights move back into the
// caches of the cores that plan runs them on) and once timed; the ratio of the two timed runs
// (overlapping / sequential) is one sample.
//
//   - the first kWarmups runs of each plan on a bucket (alternating) are not timed: workspaces
//     grow, and the pipeline plan's first few runs are slower than its steady state, enough to
//     decide duels;
//   - then kSamples duels (who goes first alternates); the bucket runs the overlapping plan when
//     the median ratio is below 1;
//   - every kExploreEvery runs another duel, and the choice follows the median of the last
//     kWindow duels, so a choice made under a burst of load, or overtaken by a change in the
//     machine's load, is revised.
//
// Why duels and a median of ratios: on a shared machine single runs of one plan and shape spread
// over a factor of several, in bursts that last many runs. Times of the two plans taken at
// different moments mostly compare the bursts, and a model under load can switch to the slower
// plan and stay there. Runs back to back see the same load, and the median of a few duels drops
// the ones a burst split. Why the untimed run in each duel: after runs of the other plan, a
// stack's weights sit in the wrong core's L2 (the pipeline keeps each layer on the core that
// last ran it), and moving them at L3 speed is a sizeable part of a run; a duel without it
// compares one plan warm against the other cold. Measurements: docs/measurements.md.
//
// A shape bucket is the run's bound symbolic dims (Session's per-symbol values), each exact up to
// 32 and rounded up to a power of two above (seq 100 and 120 share a bucket; 17 and 20 do not).
// At most kMaxBuckets buckets are tracked; a run of an untracked shape uses the sequential plan.
//
// Thread-safe: sessions of one model on different threads share its chooser (one mutex, held for
// a map lookup per run). Duels of concurrent sessions may pair runs of different sessions; that
// is noise the median absorbs.
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
  static constexpr int kWarmups = 3;    // untimed runs per plan on a new bucket
  static constexpr int kSamples = 5;    // duels before the first choice
  static constexpr size_t kWindow = 9;  // duels the choice follows
  static constexpr int64_t kExploreEvery = 64;
  static constexpr size_t kMaxBuckets = 1024;

  // The bucket of a run's bound symbol values, written into `key` (reused: no allocation once
  // its capacity suffices).
  static void bucket(const std::vector<int64_t>& bound, std::vector<int64_t>& key);

  enum class Role { kUntimed, kDuelFirst, kDuelSecond };
  struct Pick {
    int candidate = kSequential;
    Role role = Role::kUntimed;  // a duel's run: time it and record() it
  };
  // The plan the next run of bucket `key` uses.
  Pick pick(const std::vector<int64_t>& key);
  // The wall time of a duel's run.
  void record(const std::vector<int64_t>& key, const Pick& pick, double us);

  // One line per bucket with a choice ("  seq=17, batch=1: pipeline (0.62x the sequential
  // time, median of 5 duels)"), symbols named in `symbols` order and the overlapping plan
  // called `overlapping_name`.
  std::string report(const std::vector<std::string>& symbols,
                     const std::string& overlapping_name) const;

 private:
  struct Entry {
    int warmed[2] = {0, 0};
    double first_us = -1;  // the pending duel's first run (-1: none)
    int first_candidate = -1;
    std::vector<double> ratios;  // overlapping / sequential time of the last kWindow duels
    size_t oldest = 0;           // ring position once full
    int64_t duel_step = 0;       // on trial: runs of duels handed out
    int chosen = -1;             // -1 until kSamples duels
    int64_t runs = 0;            // runs picked since the first choice
  };
  static double median_ratio(const std::vector<double>& ratios);

  mutable std::mutex mutex_;
  std::map<std::vector<int64_t>, Entry> entries_;
};

}  // namespace rnnc
