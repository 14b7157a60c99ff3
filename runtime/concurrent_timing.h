// Timing several sessions at once, one host thread each (`kiln bench --devices`: one session per
// GPU): each replays its CUDA graph as Session::time does, and all start together, so the wall
// time gives the aggregate throughput of the devices working side by side.
#pragma once

#include <vector>

#include "runtime/session.h"

namespace kiln {

struct ConcurrentTiming {
  // Per session, in order: the milliseconds of each replay (Session::time).
  std::vector<std::vector<float>> milliseconds;
  // From the moment every session had finished its warm-up to the end of the last one's replays.
  double wall_seconds = 0;
};

// Each session on a thread of its own: `warmup` untimed replays, then, once every thread is
// warm, `iterations` timed ones. Rethrows the first session's error (by order) after every
// thread has finished.
ConcurrentTiming time_concurrently(const std::vector<Session*>& sessions, int iterations,
                                   int warmup);

}  // namespace kiln
