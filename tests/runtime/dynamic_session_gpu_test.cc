// GPU tests of DynamicSession (runtime/dynamic_session.h) on dynamic programs compiled here
// (kiln/dynamic_compile.h, sm_80 + sm_90 without tuning): one session running every batch of its
// range in turn, switching variants back and forth (padded ones and the batch variants sharing
// one copy of the weights and one arena), each result against the host's; a model that averages
// over the batch runs each batch on its own variant; shapes out of range are refused.
// Without a CUDA device the binary prints "no CUDA device: skipped" and exits 77.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "ir/error.h"
#include "kiln/dynamic_compile.h"
#include "runtime/dynamic_session.h"
#include "tests/unit/dynamic_models.h"
#include "tests/unit/test_temp_dir.h"

namespace kiln {
namespace {

using ::testing::HasSubstr;

CompileOptions portable() {
  CompileOptions options;
  options.cache_dir = testing_support::test_temp_dir() / "dynamic_session_cache";
  options.archs = {"sm_80", "sm_90"};
  return options;
}

Tensor rows(int64_t batch) {
  Tensor x(DType::kF32, {batch, 4});
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    x.data<float>()[i] = static_cast<float>((i * 7) % 11) - 5.0f + 0.25f * static_cast<float>(i);
  }
  return x;
}

TEST(DynamicSession, RunsEveryBatchOfItsRangeSwitchingVariants) {
  CompiledDynamicModel compiled =
      compile_dynamic(dynamic_models::row_wise_model(), portable(), {{"x", {{1, 5}, {4, 4}}}});
  ASSERT_TRUE(compiled.program.classes.at(0).padded);
  DynamicSession session = DynamicSession::load(std::move(compiled.program));
  const float w[4][3] = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}, {10, 11, 12}};
  for (const int64_t batch : {5, 3, 1, 4, 2, 5, 3}) {
    const Tensor x = rows(batch);
    const std::vector<Tensor> outputs = session.run({x});
    ASSERT_EQ(outputs.size(), 1u);
    ASSERT_EQ(outputs[0].shape(), (Shape{batch, 3})) << "batch " << batch;
    for (int64_t r = 0; r < batch; ++r) {
      for (int c = 0; c < 3; ++c) {
        double want = 0;
        for (int k = 0; k < 4; ++k) want += x.data<float>()[r * 4 + k] * w[k][c];
        want = std::max(want, 0.0);
        EXPECT_NEAR(outputs[0].data<float>()[r * 3 + c], want, 1e-4 + 1e-3 * std::abs(want))
            << "batch " << batch << " row " << r << " column " << c;
      }
    }
  }
  EXPECT_THAT([&] { session.run({rows(6)}); },
              ::testing::ThrowsMessage<InputError>(HasSubstr("outside the compiled range 1..5")));
}

TEST(DynamicSession, RunsABatchTheModelAveragesOnItsOwnVariant) {
  CompiledDynamicModel compiled =
      compile_dynamic(dynamic_models::batch_mean_model(), portable(), {{"x", {{1, 3}, {4, 4}}}});
  ASSERT_FALSE(compiled.program.classes.at(0).padded);
  DynamicSession session = DynamicSession::load(std::move(compiled.program));
  for (const int64_t batch : {2, 3, 1}) {
    const Tensor x = rows(batch);
    const Tensor y = session.run({x}).at(0);
    ASSERT_EQ(y.shape(), (Shape{batch, 4}));
    for (int c = 0; c < 4; ++c) {
      double mean = 0;
      for (int64_t r = 0; r < batch; ++r) mean += x.data<float>()[r * 4 + c] / batch;
      for (int64_t r = 0; r < batch; ++r) {
        EXPECT_NEAR(y.data<float>()[r * 4 + c], x.data<float>()[r * 4 + c] - mean, 1e-4);
      }
    }
  }
}

}  // namespace
}  // namespace kiln
