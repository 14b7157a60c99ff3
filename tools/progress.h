// Progress on stderr for commands that take long on a large model (kiln bench): a line per
// stage and a bar of jobs done that redraws in place. Shown when stderr is a terminal or when
// asked for (--progress); then, off a terminal, the bar prints a line at each quarter instead of
// redrawing. Never on stdout, so it cannot mix with a command's report or --json output.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>

namespace kiln::tools {

// "LABEL [#####---------------] 5/20": `width` cells, filled in proportion to done / total.
std::string render_progress_bar(std::string_view label, size_t done, size_t total, int width);

class Progress {
 public:
  // Prints to `out` when `enabled`, each stage line after `prefix` ("kiln bench: "); `terminal`
  // redraws the bar in place with '\r'.
  Progress(std::ostream& out, std::string prefix, bool enabled, bool terminal);
  // On std::cerr, enabled when stderr is a terminal or `forced`.
  static Progress on_stderr(std::string prefix, bool forced);

  // PREFIX TEXT on a line of its own.
  void stage(std::string_view text);
  // The bar of `label` at done / total; done == total ends its line.
  void advance(std::string_view label, size_t done, size_t total);

 private:
  std::ostream& out_;
  std::string prefix_;
  bool enabled_;
  bool terminal_;
  // Off a terminal: the current bar's last printed quarter (1 to 4) and its last done count
  // (a smaller one starts a new bar).
  size_t last_quarter_ = 0;
  size_t last_done_ = 0;
};

}  // namespace kiln::tools
