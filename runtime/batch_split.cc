#include "runtime/batch_split.h"

#include <algorithm>
#include <cstdlib>

#include "lowering/kernel_target.h"

namespace rnnc {

namespace {

// RNNC_BATCH_SPLIT: -1 (unset: the rule), 0 never, 1 whenever possible.
int forced_split() {
  static const int forced = [] {
    const char* text = std::getenv("RNNC_BATCH_SPLIT");
    if (!text || !*text) return -1;
    return std::atoi(text) != 0 ? 1 : 0;
  }();
  return forced;
}

}  // namespace

int batch_slices(int64_t batch, int64_t unit, double step_weight_bytes, int threads,
                 int64_t* bounds) {
  const int forced = forced_split();
  if (threads < 2 || unit < 1 || forced == 0) return 0;
  if (forced < 0 && step_weight_bytes > static_cast<double>(host_l2_bytes())) return 0;
  if (forced == 1) unit = 1;
  const int64_t min_entries = forced == 1 ? 2 : std::max<int64_t>(2, kMinSliceUnits * unit);
  // Slice boundaries on whole tiles: units split as evenly as they go.
  const int64_t units = (batch + unit - 1) / unit;
  int slices =
      static_cast<int>(std::min<int64_t>(std::min(threads, kMaxSlices), batch / min_entries));
  for (; slices >= 2; --slices) {
    for (int i = 0; i <= slices; ++i) bounds[i] = std::min(batch, unit * (units * i / slices));
    bool fits = true;
    for (int i = 0; i < slices; ++i) fits = fits && bounds[i + 1] - bounds[i] >= 2;
    if (fits) return slices;
  }
  return 0;
}

}  // namespace rnnc
