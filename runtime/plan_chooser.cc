#include "runtime/plan_chooser.h"

#include <algorithm>
#include <array>

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

double PlanChooser::estimate(const std::vector<double>& times) {
  std::array<double, kWindow> copy;  // no allocation: this runs after every run
  const size_t n = std::min(times.size(), kWindow);
  std::copy(times.begin(), times.begin() + static_cast<std::ptrdiff_t>(n), copy.begin());
  const auto quartile = copy.begin() + static_cast<std::ptrdiff_t>(n / 4);  // 2nd-fastest of 5
  std::nth_element(copy.begin(), quartile, copy.begin() + static_cast<std::ptrdiff_t>(n));
  return *quartile;
}

void PlanChooser::choose(Entry& entry) const {
  if (entry.times[kSequential].size() < kSamples || entry.times[kOverlapping].size() < kSamples) {
    return;
  }
  if (entry.chosen < 0) entry.runs = 0;
  entry.chosen = estimate(entry.times[kOverlapping]) < estimate(entry.times[kSequential])
                     ? kOverlapping
                     : kSequential;
}

PlanChooser::Pick PlanChooser::pick(const std::vector<int64_t>& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (entries_.size() >= kMaxBuckets) return {kSequential, false};
    it = entries_.emplace(key, Entry{}).first;
  }
  Entry& entry = it->second;
  for (int c : {kOverlapping, kSequential}) {
    if (!entry.warmed[c]) {
      entry.warmed[c] = true;
      return {c, false};
    }
  }
  if (entry.chosen < 0) {
    // Alternate, by the times recorded so far (concurrent sessions may run one plan a few
    // extra times).
    return {entry.times[kOverlapping].size() <= entry.times[kSequential].size() ? kOverlapping
                                                                                : kSequential,
            true};
  }
  const int64_t phase = entry.runs++ % kExploreEvery;
  const int other = 1 - entry.chosen;
  if (phase == kExploreEvery - 2) return {other, false};  // its caches warm again
  if (phase == kExploreEvery - 1) return {other, true};
  return {entry.chosen, true};
}

void PlanChooser::record(const std::vector<int64_t>& key, int candidate, double us) {
  RNNC_CHECK(candidate == kSequential || candidate == kOverlapping, "plan candidate ", candidate);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  Entry& entry = it->second;
  std::vector<double>& times = entry.times[candidate];
  if (times.size() < kWindow) {
    times.push_back(us);
  } else {
    times[entry.oldest[candidate]] = us;
    entry.oldest[candidate] = (entry.oldest[candidate] + 1) % kWindow;
  }
  choose(entry);
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
    auto name = [&](int c) {
      return c == kOverlapping ? overlapping_name : std::string("sequential");
    };
    auto times = [&](int c) {
      return cat(estimate(entry.times[c]), " us of ", entry.times[c].size(), " runs");
    };
    const int chosen = entry.chosen;
    text += cat("  ", shape.empty() ? std::string("(no symbolic dims)") : shape, ": ", name(chosen),
                " (lower quartile ", times(chosen), " vs ", name(1 - chosen), " ",
                times(1 - chosen), ")\n");
  }
  return text;
}

}  // namespace rnnc
