// Tests of the progress display of long commands (tools/progress.h): the bar's text, a line per
// quarter off a terminal, redrawing on one, and nothing at all when not enabled.
#include "tools/progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kiln::tools {
namespace {

TEST(ProgressTest, RendersTheBar) {
  EXPECT_EQ(render_progress_bar("compiling", 5, 20, 8), "compiling [##------] 5/20");
  EXPECT_EQ(render_progress_bar("compiling", 20, 20, 4), "compiling [####] 20/20");
  EXPECT_EQ(render_progress_bar("x", 0, 3, 3), "x [---] 0/3");
  EXPECT_EQ(render_progress_bar("nothing to do", 0, 0, 2), "nothing to do [##] 0/0");
}

TEST(ProgressTest, OffATerminalPrintsEachQuarterOnce) {
  std::ostringstream out;
  Progress progress(out, "kiln bench: ", /*enabled=*/true, /*terminal=*/false);
  progress.stage("compiling fused");
  for (size_t done = 1; done <= 8; ++done) progress.advance("kernels", done, 8);
  progress.advance("kernels", 1, 2);  // a new bar
  const std::string bar30 = "##############################";
  EXPECT_EQ(out.str(),
            "kiln bench: compiling fused\n"
            "kernels [#######-----------------------] 2/8\n"
            "kernels [###############---------------] 4/8\n"
            "kernels [######################--------] 6/8\n"
            "kernels [" +
                bar30 +
                "] 8/8\n"
                "kernels [###############---------------] 1/2\n");
}

TEST(ProgressTest, OnATerminalRedrawsInPlace) {
  std::ostringstream out;
  Progress progress(out, "", /*enabled=*/true, /*terminal=*/true);
  progress.advance("k", 1, 2);
  progress.advance("k", 2, 2);
  EXPECT_EQ(out.str(),
            "\rk [###############---------------] 1/2"
            "\rk [##############################] 2/2\n");
}

TEST(ProgressTest, PrintsNothingWhenNotEnabled) {
  std::ostringstream out;
  Progress progress(out, "kiln bench: ", /*enabled=*/false, /*terminal=*/true);
  progress.stage("compiling fused");
  progress.advance("kernels", 1, 1);
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace kiln::tools
