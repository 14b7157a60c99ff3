// Order statistics of timings (see the header).
#include "runtime/timing_stats.h"

#include <algorithm>

#include "ir/error.h"

namespace kiln {

float percentile(std::vector<float> values, double fraction) {
  if (values.empty()) throw InternalError("percentile of no timings");
  const auto rank = static_cast<size_t>(fraction * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rank),
                   values.end());
  return values[rank];
}

}  // namespace kiln
