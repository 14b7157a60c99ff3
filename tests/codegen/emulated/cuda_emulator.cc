// Fibers for the CUDA emulator (see cuda_emulator.h): emu_launch runs a kernel's blocks one after
// another, each block's threads as ucontext fibers switched round-robin at the barriers.
#include "cuda_emulator.h"
Dim3 threadIdx, blockIdx, gridDim, blockDim;
namespace {
struct Copy {
  void* shared;
  const void* global;
  int bytes;
  bool valid;
};
struct Fiber {
  ucontext_t context;
  std::vector<char> stack;
  bool done = false;
  std::vector<Copy> open;                 // issued, not yet committed
  std::vector<std::vector<Copy>> groups;  // committed, not yet waited for
};
std::vector<Fiber> fibers;
ucontext_t scheduler;
int current = -1;
int threads = 0;
// Block barrier.
int sync_arrived = 0;
unsigned sync_generation = 0;
// Warp collectives.
struct Warp {
  int arrived = 0;
  unsigned generation = 0;
  void* ptrs[32][3];
};
std::vector<Warp> warps;
std::function<void()> body;
void trampoline() {
  body();
  fibers[current].done = true;
  swapcontext(&fibers[current].context, &scheduler);
}
}  // namespace
void emu_yield() { swapcontext(&fibers[current].context, &scheduler); }
int emu_thread() { return current; }
void emu_cp_async(void* shared, const void* global, int bytes, bool valid) {
  fibers[current].open.push_back({shared, global, bytes, valid});
}
void emu_cp_async_commit() {
  Fiber& fiber = fibers[current];
  fiber.groups.push_back(std::move(fiber.open));
  fiber.open.clear();
}
void emu_cp_async_wait(int pending) {
  Fiber& fiber = fibers[current];
  while (static_cast<int>(fiber.groups.size()) > pending) {
    for (const Copy& copy : fiber.groups.front()) {
      if (copy.valid) {
        memcpy(copy.shared, copy.global, copy.bytes);
      } else {
        memset(copy.shared, 0, copy.bytes);
      }
    }
    fiber.groups.erase(fiber.groups.begin());
  }
}
void emu_syncthreads() {
  const unsigned generation = sync_generation;
  if (++sync_arrived == threads) {
    sync_arrived = 0;
    ++sync_generation;
    return;
  }
  while (sync_generation == generation) emu_yield();
}
void emu_warp_collective(void* p0, void* p1, void* p2, void (*f)(void* const (*)[3])) {
  Warp& w = warps[current / 32];
  const int lane = current % 32;
  w.ptrs[lane][0] = p0;
  w.ptrs[lane][1] = p1;
  w.ptrs[lane][2] = p2;
  const unsigned generation = w.generation;
  if (++w.arrived == 32) {
    f(w.ptrs);
    w.arrived = 0;
    ++w.generation;
    return;
  }
  while (w.generation == generation) emu_yield();
}
// Runs kernel() for every block of the grid with `block` threads.
extern "C" void emu_launch(void (*kernel)(void**), void** args, unsigned gx, unsigned gy,
                           unsigned gz, unsigned block) {
  gridDim = {gx, gy, gz};
  blockDim = {block, 1, 1};
  threads = block;
  for (unsigned z = 0; z < gz; ++z)
    for (unsigned y = 0; y < gy; ++y)
      for (unsigned x = 0; x < gx; ++x) {
        blockIdx = {x, y, z};
        fibers.assign(block, Fiber{});
        warps.assign((block + 31) / 32, Warp{});
        sync_arrived = 0;
        body = [&] { kernel(args); };
        for (unsigned t = 0; t < block; ++t) {
          fibers[t].stack.resize(64 * 1024);
          getcontext(&fibers[t].context);
          fibers[t].context.uc_stack.ss_sp = fibers[t].stack.data();
          fibers[t].context.uc_stack.ss_size = fibers[t].stack.size();
          fibers[t].context.uc_link = nullptr;
          makecontext(&fibers[t].context, trampoline, 0);
        }
        for (bool running = true; running;) {
          running = false;
          for (unsigned t = 0; t < block; ++t) {
            if (fibers[t].done) continue;
            running = true;
            current = t;
            threadIdx = {t, 0, 0};
            swapcontext(&scheduler, &fibers[t].context);
          }
        }
      }
}
