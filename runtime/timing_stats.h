// Order statistics of timings (CUDA-event milliseconds): the one definition of a median and a
// percentile that the session's step profile, autotuning and `kiln bench` report.
#pragma once

#include <utility>
#include <vector>

namespace kiln {

// The value at rank floor(fraction · (n − 1)) of `values` sorted ascending (nearest rank, the
// lower one where it falls between two); `values` must not be empty, fraction in [0, 1].
float percentile(std::vector<float> values, double fraction);

// percentile(values, 0.5): the lower median for an even count.
inline float median(std::vector<float> values) { return percentile(std::move(values), 0.5); }

}  // namespace kiln
