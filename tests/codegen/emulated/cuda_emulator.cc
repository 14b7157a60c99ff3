// The runtime of the CUDA emulator (see cuda_emulator.h), what run_emulated.py calls through
// ctypes: emu_set_schedule, emu_global_alloc, emu_global_read_only and emu_launch, which runs a
// kernel's blocks one after another in the schedule's order, each block's threads as fibers. A
// scheduler picks the next ready fiber (by the schedule's policy) whenever one arrives at a barrier
// or ends; a barrier's last arrival makes its waiters ready again. Memory is guarded (Region):
// inaccessible pages on either side, caught by a SIGSEGV handler, and canary bytes checked after
// each block and launch. A kernel bug found ends the process (status 1) with a message on stderr.
#include "cuda_emulator.h"

#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdarg>
#include <deque>
#include <functional>
#include <random>
#include <string>
#include <vector>

Dim3 threadIdx, blockIdx, gridDim, blockDim;
namespace {

// CUDA's limits for sm_80 (kiln emits for sm_80 here): static shared memory, and all shared
// memory of a block with the opt-in of cudaFuncAttributeMaxDynamicSharedMemorySize.
constexpr size_t kStaticSharedLimit = 48 * 1024;
constexpr size_t kSharedLimit = 163 * 1024;
constexpr unsigned kMaxThreads = 1024;
constexpr size_t kStackBytes = 64 * 1024;
constexpr unsigned char kCanary = 0xa5;

// The launch in progress, for messages and for the shared arrays it declares.
struct Launch {
  const char* kernel_name = "";
  void (*kernel)(void**) = nullptr;
  size_t dynamic_shared_bytes = 0;
  bool in_block = false;  // blockIdx is running
  int thread = -1;        // the running fiber
} launch;

[[noreturn]] void fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  fprintf(stderr, "cuda emulator: kernel %s", launch.kernel_name);
  if (launch.in_block) fprintf(stderr, ", block (%u, %u, %u)", blockIdx.x, blockIdx.y, blockIdx.z);
  if (launch.thread >= 0) fprintf(stderr, ", thread %d", launch.thread);
  fprintf(stderr, ": ");
  vfprintf(stderr, format, args);
  fprintf(stderr, "\n");
  va_end(args);
  _exit(1);  // not abort(): a ctest that expects the message passes only on a normal exit
}

// Guarded memory: `bytes` at `start` (16-byte aligned) end 0 to 15 bytes before an inaccessible
// page, and begin after one; the rest of the accessible pages holds canary bytes.
struct Region {
  std::string kind, name;  // "global buffer", "shared array", ...
  void (*kernel)(void**);  // the kernel of a shared array
  unsigned char* start;
  size_t bytes;
  unsigned char* pages;  // the accessible pages, page_bytes of them
  size_t page_bytes;
  bool read_only = false;
};
std::deque<Region> regions;

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

Region& guarded(const std::string& kind, const std::string& name, size_t bytes) {
  const size_t page = page_size(), padded = (bytes + 15) / 16 * 16;
  const size_t page_bytes = (padded + page - 1) / page * page;
  void* map = mmap(nullptr, page_bytes + 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED)
    fail("no memory for the %s %s (%zu bytes)", kind.c_str(), name.c_str(), bytes);
  unsigned char* pages = static_cast<unsigned char*>(map) + page;
  if (page_bytes > 0) mprotect(pages, page_bytes, PROT_READ | PROT_WRITE);
  memset(pages, kCanary, page_bytes);
  regions.push_back({kind, name, nullptr, pages + page_bytes - padded, bytes, pages, page_bytes});
  return regions.back();
}

// Ends the process if a canary byte of `region` was overwritten.
void check_canaries(const Region& region) {
  const unsigned char* end = region.start + region.bytes;
  for (const unsigned char* at = region.pages; at < region.pages + region.page_bytes; ++at) {
    if ((at < region.start || at >= end) && *at != kCanary) {
      fail("a write at byte %td of the %s %s, which has %zu bytes", at - region.start,
           region.kind.c_str(), region.name.c_str(), region.bytes);
    }
  }
}

// A fault: an access to the guard pages of a region, or a write to a read-only one.
void on_segmentation_fault(int, siginfo_t* info, void*) {
  const auto* at = static_cast<const unsigned char*>(info->si_addr);
  const size_t page = page_size();
  for (const Region& region : regions) {
    if (at < region.pages - page || at >= region.pages + region.page_bytes + page) continue;
    const bool inside = at >= region.start && at < region.start + region.bytes;
    fail("%s at byte %td of the %s %s, which has %zu bytes", inside ? "a write" : "an access",
         at - region.start, region.kind.c_str(), region.name.c_str(), region.bytes);
  }
  fail("a segmentation fault at %p, in no emulated buffer", info->si_addr);
}

void install_fault_handler() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  static std::vector<char> signal_stack(256 * 1024);
  stack_t stack = {};
  stack.ss_sp = signal_stack.data();
  stack.ss_size = signal_stack.size();
  sigaltstack(&stack, nullptr);
  struct sigaction action = {};
  action.sa_sigaction = on_segmentation_fault;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGSEGV, &action, nullptr);
  sigaction(SIGBUS, &action, nullptr);
}

// Switching between the scheduler and the fibers. On x86-64, by pushing the callee-saved
// registers (and the SSE and x87 control words) on the running stack and loading another stack
// pointer: swapcontext's system call for the signal mask took half the emulator's time.
// Elsewhere, by swapcontext.
#if defined(__x86_64__)
struct Context {
  void* stack_pointer;
};
extern "C" void emu_switch_stacks(void** save, void* load);
asm(R"(
  .text
  .p2align 4
  .type emu_switch_stacks, @function
emu_switch_stacks:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $16, %rsp
  fnstcw (%rsp)
  stmxcsr 8(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  fldcw (%rsp)
  ldmxcsr 8(%rsp)
  addq $16, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size emu_switch_stacks, .-emu_switch_stacks
)");
// A stack that emu_switch_stacks enters at `entry` (which must not return): the control words,
// six registers, `entry` as the return address, and a slot that aligns the stack as a call would.
void start_context(Context& context, unsigned char* stack, size_t bytes, void (*entry)()) {
  auto* top = reinterpret_cast<uint64_t*>(stack + bytes);
  top[-1] = 0;
  top[-2] = reinterpret_cast<uint64_t>(entry);
  for (int saved = 3; saved <= 8; ++saved) top[-saved] = 0;
  uint16_t x87_control;
  asm volatile("fnstcw %0" : "=m"(x87_control));
  top[-10] = x87_control;
  top[-9] = __builtin_ia32_stmxcsr();
  context.stack_pointer = top - 10;
}
void switch_context(Context& from, Context& to) {
  emu_switch_stacks(&from.stack_pointer, to.stack_pointer);
}
#else
struct Context {
  ucontext_t context;
};
void start_context(Context& context, unsigned char* stack, size_t bytes, void (*entry)()) {
  getcontext(&context.context);
  context.context.uc_stack.ss_sp = stack;
  context.context.uc_stack.ss_size = bytes;
  context.context.uc_link = nullptr;
  makecontext(&context.context, entry, 0);
}
void switch_context(Context& from, Context& to) { swapcontext(&from.context, &to.context); }
#endif

// The order of a block's threads: a thread's rank in `order` is its priority, and `policy` says
// how the next ready thread is picked.
enum class Policy { kFirst, kRoundRobin, kRandom };
struct Schedule {
  std::string kind = "forward";  // forward, reverse, interleaved or shuffled
  std::mt19937_64 random;
} schedule;

struct Copy {
  void* shared;
  const void* global;
  int bytes;
  bool valid;
};
struct Fiber {
  Context context;
  unsigned char* stack;
  bool done = false;
  std::vector<Copy> open;                 // issued, not yet committed
  std::vector<std::vector<Copy>> groups;  // committed, not yet waited for
};
std::vector<Fiber> fibers;  // their stacks kept from block to block
Context scheduler;
int threads = 0;
std::vector<int> order;       // rank -> thread
std::vector<int> rank_of;     // thread -> rank
std::vector<uint64_t> ready;  // a bit per rank: the thread may run
Policy policy = Policy::kFirst;
int last_rank = 0;
int sync_arrived = 0;  // at __syncthreads
struct Warp {
  int arrived = 0;
  void (*work)(void* const (*)[3]) = nullptr;  // the collective its first lane arrived at
  void* ptrs[32][3];
};
std::vector<Warp> warps;
std::function<void()> body;
// The shared memory of the launch's kernel: its static arrays and dynamic bytes.
std::vector<Region*> launch_shared;
Region* dynamic_shared = nullptr;

void set_ready(int thread, bool value) {
  const int rank = rank_of[thread];
  if (value) {
    ready[rank / 64] |= uint64_t{1} << (rank % 64);
  } else {
    ready[rank / 64] &= ~(uint64_t{1} << (rank % 64));
  }
}

// The lowest ready rank at or after `from`, or -1.
int ready_from(int from) {
  for (size_t word = from / 64; word < ready.size(); ++word) {
    uint64_t bits = ready[word];
    if (word == static_cast<size_t>(from / 64)) bits &= ~uint64_t{0} << (from % 64);
    if (bits) return static_cast<int>(word * 64) + __builtin_ctzll(bits);
  }
  return -1;
}

// The next thread to run, or -1 when none is ready.
int pick() {
  int from = 0;
  if (policy == Policy::kRoundRobin) from = (last_rank + 1) % threads;
  if (policy == Policy::kRandom) from = static_cast<int>(schedule.random() % threads);
  int rank = ready_from(from);
  if (rank < 0) rank = ready_from(0);
  if (rank < 0) return -1;
  last_rank = rank;
  return order[rank];
}

void yield() { switch_context(fibers[launch.thread].context, scheduler); }

void fiber_main() {
  body();
  fibers[launch.thread].done = true;
  set_ready(launch.thread, false);
  yield();
}

// Garbage for shared memory at a block's start.
void fill_garbage(Region& region) {
  if (schedule.kind != "shuffled") {
    memset(region.start, 0xff, region.bytes);
    return;
  }
  for (size_t at = 0; at < region.bytes; at += 8) {
    const uint64_t bits = schedule.random();
    memcpy(region.start + at, &bits, std::min<size_t>(8, region.bytes - at));
  }
}

size_t static_shared_bytes(void (*kernel)(void**)) {
  size_t bytes = 0;
  for (const Region& region : regions) {
    if (region.kind == "shared array" && region.kernel == kernel) bytes += region.bytes;
  }
  return bytes;
}

void check_shared_limits() {
  const size_t static_bytes = static_shared_bytes(launch.kernel);
  if (static_bytes > kStaticSharedLimit) {
    fail("%zu bytes of static shared memory, more than CUDA's %zu", static_bytes,
         kStaticSharedLimit);
  }
  if (static_bytes + launch.dynamic_shared_bytes > kSharedLimit) {
    fail("%zu bytes of static and %zu of dynamic shared memory, more than sm_80's %zu",
         static_bytes, launch.dynamic_shared_bytes, kSharedLimit);
  }
}

// The fibers, stacks and schedule of a launch of `block` threads.
void prepare_threads(unsigned block) {
  threads = static_cast<int>(block);
  while (fibers.size() < block) {
    const std::string name = "of thread " + std::to_string(fibers.size());
    fibers.push_back(Fiber{});
    fibers.back().stack = guarded("fiber stack", name, kStackBytes).start;
  }
  order.resize(block);
  for (unsigned t = 0; t < block; ++t) order[t] = static_cast<int>(t);
  policy = Policy::kFirst;
  if (schedule.kind == "reverse") {
    std::reverse(order.begin(), order.end());
  } else if (schedule.kind == "interleaved") {
    const unsigned warp_count = (block + 31) / 32;
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return a % 32 * warp_count + a / 32 < b % 32 * warp_count + b / 32;
    });
    policy = Policy::kRoundRobin;
  } else if (schedule.kind == "shuffled") {
    std::shuffle(order.begin(), order.end(), schedule.random);
    policy = Policy::kRandom;
  }
  rank_of.resize(block);
  for (unsigned rank = 0; rank < block; ++rank) rank_of[order[rank]] = static_cast<int>(rank);
  ready.assign((block + 63) / 64, 0);
}

// The blocks' linear indices (x fastest) in the schedule's order.
std::vector<unsigned long long> block_order(unsigned long long count) {
  std::vector<unsigned long long> blocks(count);
  for (unsigned long long i = 0; i < count; ++i) blocks[i] = i;
  if (schedule.kind == "reverse") std::reverse(blocks.begin(), blocks.end());
  if (schedule.kind == "shuffled") std::shuffle(blocks.begin(), blocks.end(), schedule.random);
  return blocks;
}

void run_block() {
  for (int t = 0; t < threads; ++t) {
    Fiber& fiber = fibers[t];
    fiber.done = false;
    fiber.open.clear();
    fiber.groups.clear();
    start_context(fiber.context, fiber.stack, kStackBytes, fiber_main);
    set_ready(t, true);
  }
  warps.assign((threads + 31) / 32, Warp{});
  sync_arrived = 0;
  last_rank = threads - 1;
  for (Region* region : launch_shared) fill_garbage(*region);
  for (int t; (t = pick()) >= 0;) {
    launch.thread = t;
    threadIdx = {static_cast<unsigned>(t), 0, 0};
    switch_context(scheduler, fibers[t].context);
  }
  launch.thread = -1;
  const long ended = std::count_if(fibers.begin(), fibers.begin() + threads,
                                   [](const Fiber& fiber) { return fiber.done; });
  if (ended < threads) {
    fail(
        "deadlocked: %ld threads wait at barriers and %ld have ended; a barrier is not reached "
        "by every thread it waits for",
        threads - ended, ended);
  }
  for (const Region* region : launch_shared) check_canaries(*region);
}

}  // namespace

void* emu_shared_array(const char* name, size_t bytes) {
  Region& region = guarded("shared array", name, bytes);
  region.kernel = launch.kernel;
  launch_shared.push_back(&region);
  check_shared_limits();
  fill_garbage(region);
  return region.start;
}

unsigned char* emu_dynamic_shared() { return dynamic_shared->start; }

void emu_cp_async(void* shared, const void* global, int bytes, bool valid) {
  fibers[launch.thread].open.push_back({shared, global, bytes, valid});
}
void emu_cp_async_commit() {
  Fiber& fiber = fibers[launch.thread];
  fiber.groups.push_back(std::move(fiber.open));
  fiber.open.clear();
}
void emu_cp_async_wait(int pending) {
  Fiber& fiber = fibers[launch.thread];
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
  if (++sync_arrived == threads) {
    sync_arrived = 0;
    for (int t = 0; t < threads; ++t) set_ready(t, true);
  } else {
    set_ready(launch.thread, false);
  }
  yield();
}

void emu_warp_collective(void* p0, void* p1, void* p2, void (*f)(void* const (*)[3])) {
  const int warp_index = launch.thread / 32, lane = launch.thread % 32;
  Warp& w = warps[warp_index];
  w.ptrs[lane][0] = p0;
  w.ptrs[lane][1] = p1;
  w.ptrs[lane][2] = p2;
  if (w.arrived == 0) {
    w.work = f;
  } else if (w.work != f) {
    fail(
        "lane %d of warp %d arrives at another warp collective (__syncwarp, __shfl_xor_sync, "
        "ldmatrix or mma) than the lanes before it",
        lane, warp_index);
  }
  if (++w.arrived == 32) {
    f(w.ptrs);
    w.arrived = 0;
    for (int t = warp_index * 32; t < warp_index * 32 + 32; ++t) set_ready(t, true);
  } else {
    set_ready(launch.thread, false);
  }
  yield();
}

// The schedule of the launches that follow: forward, reverse, interleaved or shuffled (with
// `seed`).
extern "C" void emu_set_schedule(const char* kind, unsigned seed) {
  const std::string name = kind;
  if (name != "forward" && name != "reverse" && name != "interleaved" && name != "shuffled") {
    fail("no schedule '%s'", kind);
  }
  schedule.kind = name;
  schedule.random.seed(seed);
}

// A global buffer of `bytes`, guarded, its canaries checked after each launch.
extern "C" void* emu_global_alloc(const char* name, size_t bytes) {
  return guarded("global buffer", name, bytes).start;
}

// Makes the global buffer at `start` read-only (an input, once filled).
extern "C" void emu_global_read_only(void* start) {
  for (Region& region : regions) {
    if (region.start == start) {
      mprotect(region.pages, region.page_bytes, PROT_READ);
      region.read_only = true;
    }
  }
}

// Runs kernel(args) (kernel_name in messages) for every block of the grid, with `block` threads
// (at most max_threads, its __launch_bounds__) and `dynamic_shared_bytes`.
extern "C" void emu_launch(const char* kernel_name, void (*kernel)(void**), void** args,
                           unsigned gx, unsigned gy, unsigned gz, unsigned block,
                           size_t dynamic_shared_bytes, unsigned max_threads) {
  install_fault_handler();
  launch = {kernel_name, kernel, dynamic_shared_bytes, false, -1};
  if (block == 0 || block > std::min(kMaxThreads, max_threads)) {
    fail(
        "launched with %u threads a block; CUDA allows 1 to %u, the kernel's __launch_bounds__ "
        "%u",
        block, kMaxThreads, max_threads);
  }
  if (gx == 0 || gy == 0 || gz == 0 || gx > INT_MAX || gy > 65535 || gz > 65535) {
    fail("launched on a %ux%ux%u grid; CUDA allows 1 to 2^31-1 blocks in x, 1 to 65535 in y and z",
         gx, gy, gz);
  }
  check_shared_limits();
  launch_shared.clear();
  dynamic_shared = nullptr;
  for (Region& region : regions) {
    if (region.kind == "shared array" && region.kernel == kernel) launch_shared.push_back(&region);
    if (region.kind == "dynamic shared memory" && region.kernel == kernel &&
        region.bytes == dynamic_shared_bytes) {
      dynamic_shared = &region;
    }
  }
  if (!dynamic_shared) {
    dynamic_shared = &guarded("dynamic shared memory", "g_shared", dynamic_shared_bytes);
    dynamic_shared->kernel = kernel;
  }
  launch_shared.push_back(dynamic_shared);
  gridDim = {gx, gy, gz};
  blockDim = {block, 1, 1};
  prepare_threads(block);
  body = [&] { kernel(args); };
  for (const unsigned long long linear : block_order(1ull * gx * gy * gz)) {
    blockIdx = {static_cast<unsigned>(linear % gx), static_cast<unsigned>(linear / gx % gy),
                static_cast<unsigned>(linear / gx / gy)};
    launch.in_block = true;
    run_block();
    launch.in_block = false;
  }
  for (const Region& region : regions) {
    if (region.kind == "global buffer" && !region.read_only) check_canaries(region);
  }
}
