#include "runtime/plan_chooser.h"

#include <algorithm>
#include <array>
#include <cstdio>

#include "ir/error.h"

namespace rnnc {

namespace {
constexpr int64_t kExactUpTo = 32;
}  // namespace

void PlanChooser::bucket(const std::vector<int64_t>& bound, std::vector<int64_t>& key) {
  key.resize(bound.size());
  for (size_t i = 0; i < bound.size(); ++i) {
    int64_t value = bound[i];
    if (value > kExactUpTo) {
      int64_t power = kExactUpTo;
      while (power < value) power *= 2;
      value = power;
    }
    key[i] = value;
  }
}

double PlanChooser::median_ratio(const std::vector<double>& ratios) {
  std::array<double, kWindow> sorted;  // no allocation
  const size_t n = std::min(ratios.size(), kWindow);
  std::copy(ratios.begin(), ratios.begin() + static_cast<std::ptrdiff_t>(n), sorted.begin());
  std::sort(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(n));
  return n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

PlanChooser::Pick PlanChooser::pick(const std::vector<int64_t>& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (entries_.size() >= kMaxBuckets) return {kSequential, Role::kUntimed};
    it = entries_.emplace(key, Entry{}).first;
  }
  Entry& entry = it->second;
  if (entry.warmed[kOverlapping] < kWarmups || entry.warmed[kSequential] < kWarmups) {
    const int c =
        entry.warmed[kOverlapping] <= entry.warmed[kSequential] ? kOverlapping : kSequential;
    ++entry.warmed[c];
    return {c, Role::kUntimed};
  }
  // A duel is four runs: each plan once untimed (its weights move back into the caches of the
  // cores it runs them on) and once timed; which plan goes first alternates between duels.
  auto duel_run = [](int step, int first) -> Pick {
    const int candidate = step < 2 ? first : 1 - first;
    const Role role = step == 1 ? Role::kDuelFirst : step == 3 ? Role::kDuelSecond : Role::kUntimed;
    return {candidate, role};
  };
  if (entry.chosen < 0) {
    const int64_t step = entry.duel_step++;
    return duel_run(static_cast<int>(step % 4), (step / 4) % 2 == 0 ? kOverlapping : kSequential);
  }
  const int64_t phase = entry.runs++ % kExploreEvery;
  if (phase < kExploreEvery - 4) return {entry.chosen, Role::kUntimed};
  return duel_run(static_cast<int>(phase - (kExploreEvery - 4)), 1 - entry.chosen);
}

void PlanChooser::record(const std::vector<int64_t>& key, const Pick& pick, double us) {
  RNNC_CHECK(pick.candidate == kSequential || pick.candidate == kOverlapping, "plan candidate ",
             pick.candidate);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end() || pick.role == Role::kUntimed) return;
  Entry& entry = it->second;
  if (pick.role == Role::kDuelFirst) {
    entry.first_us = us;
    entry.first_candidate = pick.candidate;
    return;
  }
  // The second run of a duel; without its first (a run that failed) there is no sample.
  if (entry.first_us <= 0 || entry.first_candidate == pick.candidate || us <= 0) return;
  const double ratio =
      pick.candidate == kSequential ? entry.first_us / us : us / entry.first_us;  // over / seq
  entry.first_us = -1;
  if (entry.ratios.size() < kWindow) {
    entry.ratios.push_back(ratio);
  } else {
    entry.ratios[entry.oldest] = ratio;
    entry.oldest = (entry.oldest + 1) % kWindow;
  }
  if (entry.ratios.size() < static_cast<size_t>(kSamples)) return;
  if (entry.chosen < 0) entry.runs = 0;
  entry.chosen = median_ratio(entry.ratios) < 1.0 ? kOverlapping : kSequential;
}

std::string PlanChooser::report(const std::vector<std::string>& symbols,
                                const std::string& overlapping_name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string text;
  for (const auto& [key, entry] : entries_) {
    if (entry.chosen < 0) continue;
    std::string shape;
    for (size_t i = 0; i < key.size() && i < symbols.size(); ++i) {
      if (key[i] < 0) continue;
      shape += shape.empty() ? "" : ", ";
      shape += symbols[i] + "=";
      shape += key[i] > kExactUpTo ? cat(key[i] / 2 + 1, "..", key[i]) : cat(key[i]);
    }
    char ratio[32];
    std::snprintf(ratio, sizeof(ratio), "%.2f", median_ratio(entry.ratios));
    text += cat("  ", shape.empty() ? std::string("(no symbolic dims)") : shape, ": ",
                entry.chosen == kOverlapping ? overlapping_name : std::string("sequential"), " (",
                overlapping_name, "/sequential time ", ratio, ", median of ", entry.ratios.size(),
                " duels)\n");
  }
  return text;
}

}  // namespace rnnc
