// Tactics chosen by measurement (see the header): sites by key, the tactic cache, rounds of
// candidate programs, the choice.
#include "kiln/autotune.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <deque>
#include <exception>
#include <future>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "codegen/kernel_cache.h"
#include "codegen/lower.h"
#include "codegen/sha256.h"
#include "ir/error.h"

namespace kiln {
namespace {

// What the tuner knows of one site key.
struct KeyState {
  TunedSite site;
  std::string cache_key;
};

// Each key's state, in the order lowering first meets them.
class Sites {
 public:
  Sites(const codegen::KernelCache& cache, std::string identity)
      : cache_(cache), identity_(std::move(identity)) {}

  // The state of `site`'s key, created (and looked up in the cache) on first sight. Safe to call
  // from the thread that lowers the next round while this one is measured.
  KeyState& state_of(const codegen::TacticSite& site) {
    const std::lock_guard lock(mutex_);
    auto [it, added] = index_.emplace(site.key, states_.size());
    if (added) {
      KeyState state;
      state.site.label = site.label;
      state.site.tactics = site.tactics;
      state.site.notes = site.notes;
      state.site.ms.assign(site.tactics.size(), -1);
      state.cache_key = codegen::sha256_hex("kiln tactic v1\n" + site.key + "\n" + identity_);
      read_cache(state);
      states_.push_back(std::move(state));
    }
    return states_[it->second];
  }

  std::deque<KeyState>& all() { return states_; }

  void store(const KeyState& state) const {
    const std::string& name = state.site.tactics[static_cast<size_t>(state.site.chosen)];
    const std::string entry = fmt::format("{}\n{}\n", name, state.site.ms[state.site.chosen]);
    cache_.store(state.cache_key, {reinterpret_cast<const uint8_t*>(entry.data()), entry.size()});
  }

 private:
  // An entry names the chosen tactic and its time; one naming no tactic of the site is a miss.
  void read_cache(KeyState& state) const {
    const std::optional<std::vector<uint8_t>> bytes = cache_.load(state.cache_key);
    if (!bytes) return;
    const std::string entry(bytes->begin(), bytes->end());
    const size_t end = entry.find('\n');
    const std::string name = entry.substr(0, end);
    for (size_t t = 0; t < state.site.tactics.size(); ++t) {
      if (state.site.tactics[t] != name) continue;
      state.site.chosen = static_cast<int>(t);
      state.site.from_cache = true;
      if (end != std::string::npos) {
        state.site.ms[t] = std::strtod(entry.c_str() + end + 1, nullptr);
      }
      return;
    }
  }

  const codegen::KernelCache& cache_;
  std::string identity_;
  std::mutex mutex_;  // guards index_ and the growth of states_
  std::map<std::string, size_t> index_;
  std::deque<KeyState> states_;  // stable references
};

// The tactic round `round` gives a site: the cache's or chosen one when the site has it, else
// tactic `round` where the site has that many (round < 0: the chosen ones), else the heuristic's.
int tactic_in_round(const KeyState& state, int round) {
  if (state.site.from_cache || round < 0) return state.site.chosen;
  return round < static_cast<int>(state.site.tactics.size()) ? round : 0;
}

Program lower_round(const Graph& graph, codegen::CodegenOptions codegen, Sites& sites, int round,
                    codegen::LoweringReport& lowering) {
  codegen.choose_tactic = [&sites, round](const codegen::TacticSite& site) {
    return tactic_in_round(sites.state_of(site), round);
  };
  return codegen::lower_graph(graph, codegen, &lowering);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A round's program and what lowering it reported.
// A round whose weights are round 0's bytes shares round 0's (WeightBytes): every round is held
// at once, and so a model's weights cost one copy rather than one a round.
struct Round {
  Program program;
  codegen::LoweringReport lowering;
  double program_ms = -1;  // its whole program's median replay, where it ran and agreed
};

// Each round's compilation result, set once from the compiling thread (null: compiled), waited
// for by the measuring one.
class CompiledRounds {
 public:
  explicit CompiledRounds(size_t rounds) : promises_(rounds), set_(rounds, false) {
    for (auto& promise : promises_) futures_.push_back(promise.get_future());
  }
  void set(size_t round, std::exception_ptr error) {
    const std::lock_guard lock(mutex_);
    if (set_[round]) return;
    set_[round] = true;
    promises_[round].set_value(error);
  }
  void set_unset(std::exception_ptr error) {
    for (size_t round = 0; round < promises_.size(); ++round) set(round, error);
  }
  std::exception_ptr wait(size_t round) { return futures_[round].get(); }

 private:
  std::mutex mutex_;
  std::vector<std::promise<std::exception_ptr>> promises_;
  std::vector<std::future<std::exception_ptr>> futures_;
  std::vector<bool> set_;
};

std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& thrown) {
    return thrown.what();
  }
}

// Why round `round`'s outputs are not the heuristic program's, or "".
std::string disagreement(const Program& program, const std::vector<Tensor>& got,
                         const std::vector<Tensor>& want) {
  for (size_t k = 0; k < want.size() && k < got.size(); ++k) {
    const double error = relative_error(got[k], want[k]);
    if (error > kMaxRelativeError) {
      const ProgramBuffer& buffer = program.buffers[static_cast<size_t>(program.outputs[k])];
      return fmt::format("output '{}' differs from the heuristic tactics' by a relative L2 error "
                         "of {:.3g}",
                         buffer.name, error);
    }
  }
  return got.size() == want.size() ? "" : "it gave another number of outputs";
}

// The labels of the sites round `round` changed, for a warning ("a, b and 3 more").
std::string changed_sites(const std::deque<KeyState>& states, int round) {
  std::vector<std::string> labels;
  for (const KeyState& state : states) {
    if (!state.site.from_cache && round < static_cast<int>(state.site.tactics.size())) {
      labels.push_back(state.site.label + " (" +
                       state.site.tactics[static_cast<size_t>(round)] + ")");
    }
  }
  std::string text;
  for (size_t k = 0; k < labels.size() && k < 3; ++k) text += (k ? ", " : "") + labels[k];
  if (labels.size() > 3) text += fmt::format(" and {} more", labels.size() - 3);
  return text;
}

// At most this many rounds are lowered at once: each holds a copy of the weights until it is
// compared with round 0's.
constexpr size_t kMaxLoweringThreads = 4;

// Lowers rounds 1.. (round 0 is lowered) on up to kMaxLoweringThreads threads (fewer where
// CodegenOptions::threads or the machine's cores say so): lowering reads the graph, and the
// sites' lookups are locked. A round whose weights are round 0's bytes drops its copy. Returns
// per round what its lowering threw (its program left empty), for measurement to leave it out.
std::vector<std::exception_ptr> lower_rounds(const Graph& fused_graph,
                                             const codegen::CodegenOptions& codegen, Sites& sites,
                                             std::vector<Round>& rounds) {
  std::vector<std::exception_ptr> errors(rounds.size());
  std::atomic<size_t> next{1};
  const auto lower_next_rounds = [&] {
    for (size_t round = next++; round < rounds.size(); round = next++) {
      try {
        Round& lowered = rounds[round];
        lowered.program =
            lower_round(fused_graph, codegen, sites, static_cast<int>(round), lowered.lowering);
        if (lowered.program.weights == rounds[0].program.weights) {
          lowered.program.weights = rounds[0].program.weights;
        }
      } catch (...) {
        errors[round] = std::current_exception();
      }
    }
  };
  const size_t cores = codegen.threads > 0 ? static_cast<size_t>(codegen.threads)
                                           : std::max(1U, std::thread::hardware_concurrency());
  const size_t threads = std::min({kMaxLoweringThreads, cores, rounds.size() - 1});
  {
    std::vector<std::jthread> helpers;
    for (size_t k = 1; k < threads; ++k) helpers.emplace_back(lower_next_rounds);
    lower_next_rounds();
  }  // the helpers join here
  return errors;
}

// Lowers rounds 1.. (round 0 is lowered), compiles all on another thread and measures each as
// it is compiled, filling the sites' times and the report. Returns the heuristic program
// (round 0's) when round 0 cannot be timed on the GPU, the report then saying why; else nullopt.
std::optional<Program> measure_rounds(const Graph& fused_graph,
                                      const codegen::CodegenOptions& codegen,
                                      const AutotuneHooks& hooks, Sites& sites,
                                      std::vector<Round>& rounds, AutotuneReport& report) {
  const int round_count = static_cast<int>(rounds.size());
  const auto lowering_start = std::chrono::steady_clock::now();
  const std::vector<std::exception_ptr> lowering_errors =
      lower_rounds(fused_graph, codegen, sites, rounds);
  report.lower_seconds = seconds_since(lowering_start);

  // Every round's kernels compile on one pool of threads (a kernel the rounds share once, round
  // 0's first), on another thread; each round is measured as soon as it is compiled, one at a
  // time, while the later ones compile.
  CompiledRounds compiled(rounds.size());
  std::vector<Program*> programs;
  for (Round& round : rounds) programs.push_back(&round.program);
  double compile_seconds = 0;
  std::future<void> compiling = std::async(std::launch::async, [&] {
    const auto compile_start = std::chrono::steady_clock::now();
    try {
      hooks.compile(programs,
                    [&](size_t round, std::exception_ptr error) { compiled.set(round, error); });
    } catch (...) {
      compiled.set_unset(std::current_exception());
    }
    compiled.set_unset(nullptr);  // rounds the hook did not report: left to measurement
    compile_seconds = seconds_since(compile_start);
  });
  // Returns with the compiling thread joined (it reads `rounds`).
  const auto finish_compiling = [&] {
    compiling.wait();
    report.compile_seconds = compile_seconds;
  };

  std::vector<Tensor> reference;
  for (int round = 0; round < round_count; ++round) {
    if (const std::exception_ptr error = lowering_errors[static_cast<size_t>(round)]) {
      report.warnings.push_back(fmt::format("tactic {} of {} left out: it failed to lower: {}",
                                            round + 1, changed_sites(sites.all(), round),
                                            message_of(error)));
      continue;
    }
    const auto waiting = std::chrono::steady_clock::now();
    const std::exception_ptr compile_error = compiled.wait(static_cast<size_t>(round));
    report.wait_seconds += seconds_since(waiting);
    if (compile_error) {
      if (round == 0) {  // the heuristic program itself: not a tactic's fault
        finish_compiling();
        std::rethrow_exception(compile_error);
      }
      report.warnings.push_back(fmt::format("tactic {} of {} left out: it failed to compile: {}",
                                            round + 1, changed_sites(sites.all(), round),
                                            message_of(compile_error)));
      continue;
    }
    const Program& program = rounds[static_cast<size_t>(round)].program;
    const codegen::LoweringReport& lowering = rounds[static_cast<size_t>(round)].lowering;
    ProgramTimes times;
    const auto measuring = std::chrono::steady_clock::now();
    try {
      times = hooks.measure(program);
      report.measure_seconds += seconds_since(measuring);
    } catch (const std::exception& error) {
      if (round == 0) {  // the GPU cannot run it now (busy, out of memory): no measurement
        finish_compiling();
        report = {};
        report.note = std::string("chosen by heuristics: the program could not be timed on "
                                  "the GPU (") + error.what() + ")";
        return std::move(rounds[0].program);
      }
      report.warnings.push_back(fmt::format("tactic {} of {} left out: it failed: {}", round + 1,
                                            changed_sites(sites.all(), round), error.what()));
      continue;
    }
    ++report.rounds;
    if (round == 0) {
      reference = std::move(times.outputs);
    } else if (const std::string why = disagreement(program, times.outputs, reference);
               !why.empty()) {
      report.warnings.push_back(fmt::format("tactic {} of {} left out: {}", round + 1,
                                            changed_sites(sites.all(), round), why));
      continue;
    }
    rounds[static_cast<size_t>(round)].program_ms = times.program_ms;
    std::map<KeyState*, double> round_ms;
    for (const codegen::TacticUse& use : lowering.tactics) {
      KeyState& state = sites.state_of(use.site);
      if (state.site.from_cache || use.tactic != round) continue;
      double& ms = round_ms[&state];
      for (int step = use.first_step; step < use.first_step + use.step_count; ++step) {
        ms += times.step_ms.at(static_cast<size_t>(step));
      }
    }
    for (const auto& [state, ms] : round_ms) state->site.ms[static_cast<size_t>(round)] = ms;
  }
  finish_compiling();
  return std::nullopt;
}

// The round whose whole program ran fastest, or -1 where none was timed whole.
int fastest_round(const std::vector<Round>& rounds) {
  int best = -1;
  for (size_t round = 0; round < rounds.size(); ++round) {
    const double ms = rounds[round].program_ms;
    if (ms >= 0 && (best < 0 || ms < rounds[static_cast<size_t>(best)].program_ms)) {
      best = static_cast<int>(round);
    }
  }
  return best;
}

// Whether every measured site chose the tactic round `round` gave it.
bool chosen_in_round(const std::deque<KeyState>& states, int round) {
  for (const KeyState& state : states) {
    if (!state.site.from_cache && state.site.chosen != tactic_in_round(state, round)) {
      return false;
    }
  }
  return true;
}

// `program` compiled and timed whole as the rounds were: its median replay, or -1 where it
// failed to compile or run (the per-site choice then stands).
double time_whole_program(const Program& program, const AutotuneHooks& hooks) {
  Program timed = program;
  std::exception_ptr failure;
  try {
    hooks.compile({&timed}, [&failure](size_t, std::exception_ptr error) {
      if (error) failure = error;
    });
    return failure ? -1 : hooks.measure(std::move(timed)).program_ms;
  } catch (const std::exception&) {
    return -1;
  }
}

// What a round's tactics were called in the report: round 0's are the heuristic's.
std::string round_name(int round) {
  return round == 0 ? "the heuristic tactics (round 1)" : fmt::format("round {}", round + 1);
}

// Where the program of each site's fastest tactic, timed whole, runs more than
// kWholeProgramMargin slower than the fastest round's, every measured site takes that round's
// tactic; `report.whole_program` says which, with both times. Returns whether the sites changed.
bool check_whole_program(const Program& chosen, const std::vector<Round>& rounds,
                         const AutotuneHooks& hooks, Sites& sites, AutotuneReport& report) {
  const int best = fastest_round(rounds);
  if (best < 0 || chosen_in_round(sites.all(), best)) return false;
  const double chosen_ms = time_whole_program(chosen, hooks);
  if (chosen_ms < 0) return false;
  const double best_ms = rounds[static_cast<size_t>(best)].program_ms;
  const bool slower = chosen_ms > best_ms * (1 + kWholeProgramMargin);
  report.whole_program = fmt::format(
      "whole programs: each problem's fastest tactic {:.4f} ms, {} {:.4f} ms: {} taken", chosen_ms,
      round_name(best), best_ms, slower ? round_name(best) + "'s" : "each problem's fastest");
  if (!slower) return false;
  for (KeyState& state : sites.all()) {
    if (!state.site.from_cache) state.site.chosen = tactic_in_round(state, best);
  }
  return true;
}

}  // namespace

Program lower_autotuned(const Graph& fused_graph, codegen::CodegenOptions codegen,
                        const AutotuneHooks& hooks, AutotuneReport& report) {
  const auto start = std::chrono::steady_clock::now();
  report = {};
  report.measured = true;
  const codegen::KernelCache cache(hooks.cache_directory);
  Sites sites(cache, hooks.cache_identity);

  // Round 0 (the heuristic's tactics where the cache has none) also finds the sites.
  std::vector<Round> rounds(1);
  rounds[0].program = lower_round(fused_graph, codegen, sites, 0, rounds[0].lowering);
  int round_count = 0;
  for (const codegen::TacticUse& use : rounds[0].lowering.tactics) {
    KeyState& state = sites.state_of(use.site);
    ++state.site.nodes;
    if (!state.site.from_cache) {
      round_count = std::max(round_count, static_cast<int>(state.site.tactics.size()));
    }
  }
  if (round_count > 0) {  // else every site cached, or none: nothing to measure
    rounds.resize(static_cast<size_t>(round_count));
    if (std::optional<Program> heuristic =
            measure_rounds(fused_graph, codegen, hooks, sites, rounds, report)) {
      return std::move(*heuristic);
    }
  }

  for (KeyState& state : sites.all()) {
    TunedSite& site = state.site;
    if (site.from_cache) continue;
    for (size_t t = 0; t < site.ms.size(); ++t) {
      if (site.ms[t] >= 0 && site.ms[t] < site.ms[static_cast<size_t>(site.chosen)]) {
        site.chosen = static_cast<int>(t);
      }
    }
  }
  codegen::LoweringReport lowering;
  Program program = lower_round(fused_graph, codegen, sites, -1, lowering);
  if (check_whole_program(program, rounds, hooks, sites, report)) {
    program = lower_round(fused_graph, codegen, sites, -1, lowering);
  }
  for (KeyState& state : sites.all()) {
    const TunedSite& site = state.site;
    if (site.from_cache) {
      ++report.from_cache;
    } else if (site.ms[static_cast<size_t>(site.chosen)] >= 0) {
      sites.store(state);
    }
    report.sites.push_back(site);
  }
  report.seconds = seconds_since(start);
  return program;
}

std::vector<Tensor> tuning_inputs(const Program& program) {
  std::mt19937 random(20261126);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<Tensor> inputs;
  for (const int buffer : program.inputs) {
    Tensor tensor(program.buffers[static_cast<size_t>(buffer)].type);
    if (is_float(tensor.dtype())) {
      for (int64_t i = 0; i < tensor.num_elements(); ++i) tensor.set_float(i, uniform(random));
    }
    inputs.push_back(std::move(tensor));
  }
  return inputs;
}

double relative_error(const Tensor& got, const Tensor& want) {
  constexpr double kInfinity = std::numeric_limits<double>::infinity();
  if (got.type() != want.type()) return kInfinity;
  if (!is_float(want.dtype())) return got.same_contents(want) ? 0 : kInfinity;
  double difference = 0, magnitude = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double g = got.get_double(i), w = want.get_double(i);
    if (std::isnan(w)) continue;
    if (!std::isfinite(g) && g != w) return kInfinity;
    if (std::isinf(w)) continue;
    difference += (g - w) * (g - w);
    magnitude += w * w;
  }
  if (difference == 0) return 0;
  return magnitude > 0 ? std::sqrt(difference / magnitude) : kInfinity;
}

std::vector<std::string> unfused_notes(const AutotuneReport& report) {
  std::vector<std::string> notes;
  for (const TunedSite& site : report.sites) {
    const auto chosen = static_cast<size_t>(site.chosen);
    if (site.tactics[chosen] != codegen::kUnfusedTactic) continue;
    double fused_ms = -1;
    for (size_t t = 0; t < site.tactics.size(); ++t) {
      if (t != chosen && site.ms[t] >= 0 && (fused_ms < 0 || site.ms[t] < fused_ms)) {
        fused_ms = site.ms[t];
      }
    }
    const std::string nodes = fmt::format("{} node{}", site.nodes, site.nodes == 1 ? "" : "s");
    notes.push_back(
        site.ms[chosen] >= 0 && fused_ms >= 0
            ? fmt::format("fuse-kernels: {} ({}): unfused by measurement: its ops as kernels of "
                          "their own took {:.4f} ms, the fused kernel {:.4f} ms at best",
                          site.label, nodes, site.ms[chosen], fused_ms)
            : fmt::format("fuse-kernels: {} ({}): unfused ({})", site.label, nodes,
                          site.from_cache ? "the tactic cache's choice" : "--tactic"));
  }
  return notes;
}

}  // namespace kiln
