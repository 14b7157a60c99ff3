// Timing several sessions at once (concurrent_timing.h).
#include "runtime/concurrent_timing.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <latch>
#include <thread>

namespace kiln {

ConcurrentTiming time_concurrently(const std::vector<Session*>& sessions, int iterations,
                                   int warmup) {
  using Clock = std::chrono::steady_clock;
  const size_t count = sessions.size();
  ConcurrentTiming timing;
  timing.milliseconds.resize(count);
  std::vector<std::exception_ptr> errors(count);
  std::vector<Clock::time_point> ends(count);
  // The threads and this one: the clock starts when every thread is warm (or has failed).
  std::latch warm(static_cast<std::ptrdiff_t>(count) + 1);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < count; ++i) {
    threads.emplace_back([&, i] {
      try {
        if (warmup > 0) sessions[i]->time(1, warmup - 1);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      warm.arrive_and_wait();
      if (errors[i]) return;
      try {
        timing.milliseconds[i] = sessions[i]->time(iterations, 0);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      ends[i] = Clock::now();
    });
  }
  warm.arrive_and_wait();
  const Clock::time_point start = Clock::now();
  for (std::thread& thread : threads) thread.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  Clock::time_point end = start;
  for (const Clock::time_point& thread_end : ends) end = std::max(end, thread_end);
  timing.wall_seconds = std::chrono::duration<double>(end - start).count();
  return timing;
}

}  // namespace kiln
