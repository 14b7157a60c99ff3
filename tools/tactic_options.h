// The tactic flags of kiln compile and kiln bench (--autotune, --no-autotune, --explain-tactics,
// --tactic, --no-library-tactics)
// and how their outcome is printed (kiln/autotune.h's report).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "kiln/autotune.h"

namespace kiln::tools {

struct TacticOptions {
  bool autotune = false;
  bool no_autotune = false;
  bool explain = false;
  std::string forced;  // --tactic
  bool no_library = false;  // --no-library-tactics

  // CompileOptions::autotune: unset unless one of the flags is given.
  std::optional<bool> setting() const;
};

void add_tactic_options(CLI::App& command, TacticOptions& options);

// One line: "tactics: 14 nodes of 9 problems measured in 6 rounds (3.21 s), 2 problems from the
// tactic cache", or the report's note; then a line per warning.
std::string tactic_summary(const AutotuneReport& report);

// Each problem: its label, nodes, and every tactic's time, the chosen one marked (--explain-
// tactics).
std::string tactic_table(const AutotuneReport& report);

}  // namespace kiln::tools
