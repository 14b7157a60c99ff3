// The median and percentiles that tuning, the step profile and `kiln bench` report.
#include "runtime/timing_stats.h"

#include <gtest/gtest.h>

#include "ir/error.h"

namespace kiln {
namespace {

TEST(TimingStats, PercentilesTakeTheLowerNearestRank) {
  const std::vector<float> odd = {5, 1, 4, 2, 3};
  EXPECT_EQ(median(odd), 3);
  EXPECT_EQ(percentile(odd, 0.0), 1);
  EXPECT_EQ(percentile(odd, 0.9), 4);  // rank floor(0.9 · 4) = 3
  EXPECT_EQ(percentile(odd, 1.0), 5);
  // An even count: the lower of the two middle values.
  EXPECT_EQ(median({4, 1, 3, 2}), 2);
  EXPECT_EQ(median({7}), 7);
}

TEST(TimingStats, NoTimingsIsAnInternalError) { EXPECT_THROW(median({}), InternalError); }

}  // namespace
}  // namespace kiln
