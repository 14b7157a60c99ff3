// Progress on stderr (see the header).
#include "tools/progress.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <utility>

namespace kiln::tools {

namespace {
constexpr int kBarWidth = 30;
}  // namespace

std::string render_progress_bar(std::string_view label, size_t done, size_t total, int width) {
  const size_t cells = static_cast<size_t>(std::max(width, 1));
  const size_t filled = total == 0 ? cells : std::min(cells, done * cells / total);
  return std::string(label) + " [" + std::string(filled, '#') + std::string(cells - filled, '-') +
         "] " + std::to_string(done) + "/" + std::to_string(total);
}

Progress::Progress(std::ostream& out, std::string prefix, bool enabled, bool terminal)
    : out_(out), prefix_(std::move(prefix)), enabled_(enabled), terminal_(terminal) {}

Progress Progress::on_stderr(std::string prefix, bool forced) {
  const bool terminal = isatty(STDERR_FILENO) == 1;
  return Progress(std::cerr, std::move(prefix), forced || terminal, terminal);
}

void Progress::stage(std::string_view text) {
  if (enabled_) out_ << prefix_ << text << std::endl;
}

void Progress::advance(std::string_view label, size_t done, size_t total) {
  if (!enabled_) return;
  const std::string bar = render_progress_bar(label, done, total, kBarWidth);
  if (terminal_) {
    out_ << '\r' << bar << (done >= total ? "\n" : "") << std::flush;
    return;
  }
  // Off a terminal: a line at each of quarters 1 to 4 (25%, 50%, 75%, done), once per bar.
  if (done < last_done_) last_quarter_ = 0;
  last_done_ = done;
  const size_t quarter = total == 0 ? 4 : std::min<size_t>(4, done * 4 / total);
  if (quarter > last_quarter_) {
    out_ << bar << std::endl;
    last_quarter_ = quarter;
  }
}

}  // namespace kiln::tools
