// ScanGrade CPU emulator: blocks, threads as fiber tasks, rendezvous points, deadlock detection.
//
// One block runs at a time. Each CUDA thread is a task; tasks run on pooled worker fibers
// (Boost.Context). A worker whose thread exits runs the next not-yet-started thread itself, so
// fibers are only multiplied by threads that are suspended at the same time. Switching goes
// directly from one worker to the next (pick_next() is the whole scheduler); the launching (main)
// context only regains control when no thread of the block can run.
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <new>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_runtime.h"
#include "internal.h"

namespace ctx = boost::context;

// built-in variables (global namespace, as in CUDA)
uint3 threadIdx{0, 0, 0};
uint3 blockIdx{0, 0, 0};
dim3 blockDim{1, 1, 1};
dim3 gridDim{1, 1, 1};

namespace scangrade::emu::detail {

std::uint64_t g_block_generation = 0;
unsigned char* g_dynamic_shared = nullptr;
const char* g_entered_kernel = nullptr;
const char* g_entered_file = nullptr;
int g_entered_line = 0;

void kernel_entered_first(const char* name, const char* file, int line) {
  g_entered_kernel = name;
  g_entered_file = file;
  g_entered_line = line;
}

namespace {

constexpr unsigned kWarpSize = 32;

enum class State : std::uint8_t { Runnable, Barrier, Warp, Exited };

struct Worker;

struct Thread {
  uint3 idx{};
  unsigned linear = 0;
  State state = State::Runnable;
  bool started = false;
  Worker* worker = nullptr;
  const char* file = nullptr;  // where it waits
  int line = 0;
  int op = 0;  // BarrierOp or WarpOp it waits in
};

struct Worker {
  ctx::fiber fiber;  // valid while suspended
  Thread* assigned = nullptr;
  bool idle = false;
  bool abandoned = false;          // left from a signal handler: never resumed, never unwound
  std::uintptr_t stack_low = 0;    // lowest address of its stack (the overflow guard page)
};

struct Warp {
  std::uint32_t exists = 0;   // lanes that are threads of the block
  std::uint32_t exited = 0;
  std::uint32_t arrived = 0;  // lanes waiting in a warp operation
  std::uint32_t mask[kWarpSize];
  std::uint8_t op[kWarpSize];
  std::uint64_t value[kWarpSize];
  int arg[kWarpSize];
  int width[kWarpSize];
  std::uint64_t result[kWarpSize];
};

const char* barrier_name(int op) {
  switch (static_cast<BarrierOp>(op)) {
    case BarrierOp::Sync: return "__syncthreads";
    case BarrierOp::Count: return "__syncthreads_count";
    case BarrierOp::And: return "__syncthreads_and";
    case BarrierOp::Or: return "__syncthreads_or";
  }
  return "barrier";
}

const char* warp_op_name(int op) {
  switch (static_cast<WarpOp>(op)) {
    case WarpOp::Sync: return "__syncwarp";
    case WarpOp::ShflIdx: return "__shfl_sync";
    case WarpOp::ShflUp: return "__shfl_up_sync";
    case WarpOp::ShflDown: return "__shfl_down_sync";
    case WarpOp::ShflXor: return "__shfl_xor_sync";
    case WarpOp::Ballot: return "__ballot_sync";
    case WarpOp::Any: return "__any_sync";
    case WarpOp::All: return "__all_sync";
    case WarpOp::ReduceAddU: return "__reduce_add_sync";
    case WarpOp::ReduceMinU:
    case WarpOp::ReduceMinI: return "__reduce_min_sync";
    case WarpOp::ReduceMaxU:
    case WarpOp::ReduceMaxI: return "__reduce_max_sync";
    case WarpOp::ReduceAnd: return "__reduce_and_sync";
    case WarpOp::ReduceOr: return "__reduce_or_sync";
    case WarpOp::ReduceXor: return "__reduce_xor_sync";
  }
  return "warp operation";
}

std::string coords(uint3 v) {
  return "(" + std::to_string(v.x) + "," + std::to_string(v.y) + "," + std::to_string(v.z) + ")";
}
std::string coords(dim3 v) { return coords(uint3{v.x, v.y, v.z}); }

std::string hex(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

bool same_site(const char* f1, int l1, const char* f2, int l2) {
  return l1 == l2 && (f1 == f2 || std::strcmp(f1, f2) == 0);
}

/// A reserved address range that ends at a PROT_NONE guard page, so that an access just past the
/// end of the usable part faults.
struct GuardedRegion {
  unsigned char* begin = nullptr;  // usable part
  unsigned char* end = nullptr;    // first byte of the guard page

  void reserve(std::size_t bytes) {
    std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    std::size_t usable = (bytes + page - 1) / page * page;
    void* p = mmap(nullptr, usable + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "ScanGrade emulator: cannot reserve shared memory\n");
      std::abort();
    }
    begin = static_cast<unsigned char*>(p);
    end = begin + usable;
    mprotect(end, page, PROT_NONE);
  }
  bool guards(const void* addr) const {
    auto a = static_cast<const unsigned char*>(addr);
    return begin != nullptr && a >= end && a < end + sysconf(_SC_PAGESIZE);
  }
};

/// Fiber stacks: mmap'd with a guard page below, and with the top shifted by a per-stack "colour" so
/// that the hot top frames of a thousand suspended fibers do not all map to the same cache sets
/// (with equally aligned stacks every switch missed the cache; colouring halves the switch cost).
struct ColouredStack {
  std::size_t size;
  std::size_t colour;
  std::uintptr_t* low = nullptr;  // receives the stack's lowest address (for the fault report)

  ctx::stack_context allocate() {
    std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    std::size_t bytes = (size + colour + page - 1) / page * page + page;
    void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) throw std::bad_alloc();
    mprotect(base, page, PROT_NONE);  // overflow guard
    if (low != nullptr) *low = reinterpret_cast<std::uintptr_t>(base);
    ctx::stack_context sctx;
    sctx.size = bytes - colour;
    sctx.sp = static_cast<char*>(base) + bytes - colour;
    return sctx;
  }
  void deallocate(ctx::stack_context& sctx) noexcept {
    std::size_t bytes = sctx.size + colour;
    munmap(static_cast<char*>(sctx.sp) + colour - bytes, bytes);
  }
};

class Scheduler {
 public:
  Scheduler() {
    if (const char* kb = std::getenv("SCANGRADE_EMU_STACK_KB")) {
      long v = std::strtol(kb, nullptr, 10);
      if (v >= 16) stack_bytes_ = static_cast<std::size_t>(v) * 1024;
    }
    if (const char* order = std::getenv("SCANGRADE_EMU_THREAD_ORDER")) {
      std::string s = order;
      std::uint64_t seed = 0;
      if (auto colon = s.find(':'); colon != std::string::npos) {
        seed = std::strtoull(s.c_str() + colon + 1, nullptr, 10);
        s.resize(colon);
      }
      if (s == "reverse") set_order(ThreadOrder::Reverse, seed);
      else if (s == "random") set_order(ThreadOrder::Random, seed);
      else set_order(ThreadOrder::Forward, seed);
    }
    static_region_.reserve(kSharedPerBlock);
    dynamic_region_.reserve(kSharedPerBlockOptin);
  }

  void set_order(ThreadOrder order, std::uint64_t seed) {
    order_kind_ = order;
    seed_ = seed;
    rng_ = seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
  }
  ThreadOrder order() const { return order_kind_; }
  void set_lockstep(bool on) { lockstep_ = on; }
  bool lockstep() const { return lockstep_; }
  bool in_kernel() const { return in_kernel_; }

  void launch(const LaunchConfig& cfg, const char* file, int line, ThreadBody body, void* closure);

  int block_barrier(BarrierOp op, int predicate, const char* file, int line);
  std::uint64_t warp_op(WarpOp op, unsigned mask, std::uint64_t value, int arg, int width, const char* file,
                        int line);
  unsigned active_mask() const;
  void yield_point();
  void volatile_access(const void* addr);
  [[noreturn]] void fault(const std::string& what);
  void* static_shared_alloc(std::size_t size, std::size_t align);

  // an access to unmapped memory (SIGSEGV/SIGBUS) in a kernel thread
  bool can_catch_signal() const { return in_kernel_ && running_worker_ != nullptr && current_ != nullptr; }
  /// From the signal handler: ends the block like fault(), never returns; the report is written
  /// once back in the launching context (signal_report()).
  [[noreturn]] void signal_fault(int sig, const void* addr, int access);

  // for the SIGSEGV report
  std::string where() const;
  const GuardedRegion& static_region() const { return static_region_; }
  const GuardedRegion& dynamic_region() const { return dynamic_region_; }
  std::size_t dynamic_bytes() const { return dynamic_bytes_; }

 private:
  // context switching (inlined: every frame on a suspended fiber's stack costs cache misses)
  [[gnu::always_inline]] inline void switch_to(ctx::fiber* target, ctx::fiber* self_slot);
  [[gnu::always_inline]] inline void resume(Thread* t, ctx::fiber* self_slot);
  [[gnu::always_inline]] inline void yield();
  Worker* take_worker();
  void worker_loop(Worker* w);
  void run_thread(Thread* t);
  void on_exit(Thread* t);
  [[gnu::always_inline]] inline Thread* pick_next();
  Thread* next_in_warp();
  void new_round();
  std::uint64_t next_random();

  // block
  bool run_block();
  void complete_barrier();
  void complete_warp(Warp& w, std::uint32_t group);
  std::string deadlock_report() const;
  std::string thread_label(const Thread& t) const;
  std::string launch_label() const;
  void discard_busy_workers();

  // settings
  ThreadOrder order_kind_ = ThreadOrder::Forward;
  bool lockstep_ = false;
  std::uint64_t seed_ = 0;
  std::uint64_t rng_ = 0;
  std::size_t stack_bytes_ = 256 * 1024;

  // contexts
  ctx::fiber main_;
  ctx::fiber* from_slot_ = nullptr;  // where the context that switched away stores its continuation
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<Worker*> idle_;
  Worker* running_worker_ = nullptr;  // nullptr: main

  // launch
  bool in_kernel_ = false;
  std::uint64_t rendezvous_ = 0;  // added to Stats at the end of the launch
  const char* launch_file_ = "";
  int launch_line_ = 0;
  ThreadBody body_ = nullptr;
  void* closure_ = nullptr;
  std::size_t dynamic_bytes_ = 0;
  GuardedRegion static_region_;
  GuardedRegion dynamic_region_;
  unsigned char* static_top_ = nullptr;
  std::size_t static_limit_ = kSharedPerBlock;

  // block
  std::vector<Thread> threads_;
  std::vector<Warp> warps_;
  std::vector<unsigned> order_;
  unsigned nthreads_ = 0;
  unsigned pos_ = 0;
  unsigned live_ = 0;
  unsigned runnable_ = 0;
  Thread* current_ = nullptr;
  bool faulted_ = false;
  std::string fault_message_;
  cudaError_t fault_code_ = cudaErrorLaunchFailure;

  // what the signal handler saw (plain data: no allocation in the handler)
  struct SignalFault {
    int sig = 0;
    const void* addr = nullptr;
    int access = 0;  // 0 unknown, 1 read, 2 write
    std::uintptr_t stack_low = 0;
    uint3 idx{};
    unsigned linear = 0;
  };
  bool signal_faulted_ = false;
  SignalFault signal_;
  std::string signal_report() const;

  // block barrier
  unsigned at_barrier_ = 0;
  const char* barrier_file_ = nullptr;
  int barrier_line_ = 0;
  int barrier_op_ = 0;
  bool barrier_mixed_ = false;
  int barrier_accum_ = 0;
  int barrier_count_ = 0;  // result of the last completed barrier
  int barrier_total_ = 0;
  bool barrier_done_ = false;  // a barrier completed since the last pick_next
};

// never destroyed: unwinding idle workers at exit would be wasted work
Scheduler* g_scheduler = nullptr;

Scheduler& scheduler() {
  if (g_scheduler == nullptr) g_scheduler = new Scheduler;
  return *g_scheduler;
}

// ---- context switching --------------------------------------------------------------------------

// Suspends the running context (its continuation goes to *self_slot) and resumes *target.
void Scheduler::switch_to(ctx::fiber* target, ctx::fiber* self_slot) {
  from_slot_ = self_slot;
  ctx::fiber back = std::move(*target).resume();
  // resumed: whoever switched to us left its slot in from_slot_
  *from_slot_ = std::move(back);
}

Worker* Scheduler::take_worker() {
  if (!idle_.empty()) {
    Worker* w = idle_.back();
    idle_.pop_back();
    w->idle = false;
    return w;
  }
  workers_.push_back(std::make_unique<Worker>());
  Worker* w = workers_.back().get();
  std::size_t colour = (workers_.size() * 9 % 1024) * 64;  // 9 cache lines apart, within 64 KiB
  w->fiber = ctx::fiber(std::allocator_arg, ColouredStack{stack_bytes_, colour, &w->stack_low},
                        [this, w](ctx::fiber&& caller) -> ctx::fiber {
                          *from_slot_ = std::move(caller);
                          worker_loop(w);  // returns only by unwinding
                          return ctx::fiber{};
                        });
  return w;
}

// Gives the CPU to thread t (starting it on a worker if needed).
void Scheduler::resume(Thread* t, ctx::fiber* self_slot) {
  current_ = t;
  threadIdx = t->idx;
  Worker* target;
  if (!t->started) {
    t->started = true;
    target = take_worker();
    target->assigned = t;
    t->worker = target;
  } else {
    target = t->worker;
  }
  running_worker_ = target;
  switch_to(&target->fiber, self_slot);
}

void Scheduler::yield() {
  Thread* self = current_;
  Worker* me = running_worker_;
  Thread* next = pick_next();
  if (next == self) return;
  if (next == nullptr) {
    running_worker_ = nullptr;
    switch_to(&main_, &me->fiber);
  } else {
    resume(next, &me->fiber);
  }
  // resumed by someone who set current_ = self
}

void Scheduler::run_thread(Thread* t) {
  // fault() switches away for good, so it is called outside the handlers
  std::string error;
  try {
    body_(closure_);
  } catch (const ctx::detail::forced_unwind&) {
    throw;
  } catch (const std::exception& e) {
    error = std::string("an exception: ") + e.what();
  } catch (...) {
    error = "an exception of unknown type";
  }
  if (!error.empty()) fault(thread_label(*t) + " threw " + error);
}

void Scheduler::worker_loop(Worker* w) {
  for (;;) {
    Thread* t = w->assigned;
    run_thread(t);
    on_exit(t);
    Thread* next = pick_next();
    if (next != nullptr && !next->started) {
      // run it here: no switch needed
      next->started = true;
      next->worker = w;
      w->assigned = next;
      current_ = next;
      threadIdx = next->idx;
      continue;
    }
    w->assigned = nullptr;
    w->idle = true;
    idle_.push_back(w);
    if (next == nullptr) {
      running_worker_ = nullptr;
      switch_to(&main_, &w->fiber);
    } else {
      resume(next, &w->fiber);
    }
    // resumed with a new assignment by take_worker()'s caller
  }
}

// ---- order --------------------------------------------------------------------------------------

std::uint64_t Scheduler::next_random() {
  // splitmix64
  std::uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void Scheduler::new_round() {
  pos_ = 0;
  if (order_kind_ == ThreadOrder::Random) {
    for (unsigned i = nthreads_; i > 1; --i) {
      unsigned j = static_cast<unsigned>((next_random() >> 32) * i >> 32);
      std::swap(order_[i - 1], order_[j]);
    }
  }
}

// The next runnable thread in this pass's order; a new pass starts when this one is exhausted.
// nullptr when no thread can run. With warp lockstep, a thread that stops (a yield, a barrier, a
// warp operation, its exit) hands over to the next runnable lane of its own warp first, so that the
// warp's lanes stay in step at volatile shared accesses (volatile_access). Once a barrier completes,
// a new pass of the thread order starts.
Thread* Scheduler::pick_next() {
  if (barrier_done_) {
    // a new step starts from the order's first thread: forward is thread 0 first after every barrier,
    // even when a yield (an atomic ticket, a fence) left the pass elsewhere before it
    barrier_done_ = false;
    new_round();
  } else if (lockstep_ && current_ != nullptr) {
    if (Thread* mate = next_in_warp()) return mate;
  }
  for (;;) {
    while (pos_ < nthreads_) {
      Thread* t = &threads_[order_[pos_++]];
      if (t->state == State::Runnable) return t;
    }
    if (runnable_ == 0) return nullptr;
    new_round();
  }
}

// ---- launch and blocks --------------------------------------------------------------------------

std::string Scheduler::launch_label() const {
  if (g_entered_kernel != nullptr)
    return "kernel `" + std::string(g_entered_kernel) + "` (" + g_entered_file + ":" + std::to_string(g_entered_line) +
           ") launched at " + std::string(launch_file_) + ":" + std::to_string(launch_line_) + " with grid " +
           coords(gridDim) + " block " + coords(blockDim);
  return "kernel launched at " + std::string(launch_file_) + ":" + std::to_string(launch_line_) + " with grid " +
         coords(gridDim) + " block " + coords(blockDim);
}

std::string Scheduler::thread_label(const Thread& t) const {
  return "block " + coords(blockIdx) + " thread " + coords(t.idx) + " (warp " + std::to_string(t.linear / kWarpSize) +
         " lane " + std::to_string(t.linear % kWarpSize) + ")";
}

std::string Scheduler::where() const {
  std::string s = launch_label() + ", block " + coords(blockIdx);
  if (current_ != nullptr) s += " thread " + coords(current_->idx);
  return s;
}

void sigsegv_handler(int sig, siginfo_t* info, void*);
struct sigaction g_old_segv, g_old_bus;

void Scheduler::launch(const LaunchConfig& cfg, const char* file, int line, ThreadBody body, void* closure) {
  ErrorState& err = errors();
  std::string site = std::string(file) + ":" + std::to_string(line);
  if (in_kernel_) {
    fault(site + ": kernel launch from device code (dynamic parallelism) is not supported");
  }
  if (err.sticky != cudaSuccess) return;  // the context is broken; launches do nothing

  // configuration checks, in CUDA's terms
  const dim3 b = cfg.block, g = cfg.grid;
  std::uint64_t nthreads = std::uint64_t(b.x) * b.y * b.z;
  std::string bad;
  if (b.x == 0 || b.y == 0 || b.z == 0) bad = "block dimensions " + coords(b) + " contain a zero";
  else if (g.x == 0 || g.y == 0 || g.z == 0) bad = "grid dimensions " + coords(g) + " contain a zero";
  else if (nthreads > kMaxThreadsPerBlock)
    bad = "block " + coords(b) + " has " + std::to_string(nthreads) + " threads; the limit is 1024";
  else if (b.x > 1024 || b.y > 1024 || b.z > 64) bad = "block dimensions " + coords(b) + " exceed (1024,1024,64)";
  else if (g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535)
    bad = "grid dimensions " + coords(g) + " exceed (2147483647,65535,65535)";
  else if (cfg.shared_bytes > dynamic_shared_limit())
    bad = "dynamic shared memory of " + std::to_string(cfg.shared_bytes) + " bytes exceeds the limit of " +
          std::to_string(dynamic_shared_limit()) + " bytes";
  if (!bad.empty()) {
    api_error(cudaErrorInvalidConfiguration, site + ": invalid launch configuration: " + bad);
    return;
  }
  if (!stream_is_valid(cfg.stream)) {
    api_error(cudaErrorInvalidResourceHandle, site + ": kernel launched on an invalid (destroyed?) stream");
    return;
  }

  Stats& stats = mutable_stats();
  ++stats.launches;
  trace_launch(file, line, std::uint64_t(g.x) * g.y * g.z, cfg.param_bytes);
  g_entered_kernel = nullptr;
  launch_file_ = file;
  launch_line_ = line;
  body_ = body;
  closure_ = closure;
  blockDim = b;
  gridDim = g;
  dynamic_bytes_ = cfg.shared_bytes;
  static_limit_ = std::min(kSharedPerBlock, dynamic_shared_limit() - dynamic_bytes_);
  // dynamic shared memory ends (16-byte aligned) just below a guard page
  g_dynamic_shared = dynamic_region_.end - ((dynamic_bytes_ + 15) / 16 * 16);

  nthreads_ = static_cast<unsigned>(nthreads);
  threads_.assign(nthreads_, Thread{});
  for (unsigned i = 0; i < nthreads_; ++i) {
    threads_[i].linear = i;
    threads_[i].idx = uint3{i % b.x, (i / b.x) % b.y, i / (b.x * b.y)};
  }
  unsigned nwarps = (nthreads_ + kWarpSize - 1) / kWarpSize;
  warps_.assign(nwarps, Warp{});
  for (unsigned w = 0; w < nwarps; ++w) {
    unsigned lanes = std::min(kWarpSize, nthreads_ - w * kWarpSize);
    warps_[w].exists = lanes == 32 ? 0xffffffffu : ((1u << lanes) - 1u);
  }
  order_.resize(nthreads_);
  for (unsigned i = 0; i < nthreads_; ++i) {
    order_[i] = order_kind_ == ThreadOrder::Reverse ? nthreads_ - 1 - i : i;
  }

  struct sigaction sa {};
  sa.sa_sigaction = sigsegv_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &g_old_segv);
  sigaction(SIGBUS, &sa, &g_old_bus);
  install_division_handler();

  in_kernel_ = true;
  bool ok = true;
  for (unsigned z = 0; ok && z < g.z; ++z) {
    for (unsigned y = 0; ok && y < g.y; ++y) {
      for (unsigned x = 0; ok && x < g.x; ++x) {
        blockIdx = uint3{x, y, z};
        ok = run_block();
      }
    }
  }
  in_kernel_ = false;
  current_ = nullptr;
  stats.rendezvous += rendezvous_;
  rendezvous_ = 0;

  sigaction(SIGSEGV, &g_old_segv, nullptr);
  sigaction(SIGBUS, &g_old_bus, nullptr);
  restore_division_handler();
  note_launch(file, line, g_entered_kernel, g_entered_file, g_entered_line);

  if (!ok) kernel_fault(fault_message_, fault_code_);
}

// Runs the block blockIdx; false when it faulted (fault_message_ says why).
bool Scheduler::run_block() {
  Stats& stats = mutable_stats();
  ++stats.blocks;
  stats.threads += nthreads_;
  ++g_block_generation;
  static_top_ = static_region_.end;
  if (poison_enabled() && dynamic_bytes_ > 0) std::memset(g_dynamic_shared, 0xFF, dynamic_bytes_);

  for (Thread& t : threads_) {
    t.state = State::Runnable;
    t.started = false;
    t.worker = nullptr;
  }
  for (Warp& w : warps_) w.exited = w.arrived = 0;
  live_ = runnable_ = nthreads_;
  at_barrier_ = 0;
  faulted_ = false;
  fault_code_ = cudaErrorLaunchFailure;
  pos_ = 0;
  new_round();

  Thread* first = pick_next();
  resume(first, &main_);
  // back in main: every thread exited, or none can run, or a thread faulted
  current_ = nullptr;
  if (signal_faulted_) {
    // the handler never returned: the signal it blocked is still blocked
    signal_faulted_ = false;
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGSEGV);
    sigaddset(&blocked, SIGBUS);
    sigprocmask(SIG_UNBLOCK, &blocked, nullptr);
    fault_message_ = signal_report();
    fault_code_ = cudaErrorIllegalAddress;
  }
  if (!faulted_ && live_ > 0) {
    faulted_ = true;
    fault_message_ = deadlock_report();
  }
  if (faulted_) {
    discard_busy_workers();
    return false;
  }
  return true;
}

// Destroys the workers that hold suspended threads (unwinding their stacks).
void Scheduler::discard_busy_workers() {
  std::vector<std::unique_ptr<Worker>> keep;
  for (auto& w : workers_) {
    if (w->idle) {
      keep.push_back(std::move(w));
    } else if (w->abandoned) {
      // suspended inside a signal handler, in the middle of the student's frames: unwinding from
      // there is not safe. Its stack stays allocated (one per fault), the fiber is leaked.
      new ctx::fiber(std::move(w->fiber));
    } else {
      w->fiber = ctx::fiber{};  // unwinds the suspended thread
    }
  }
  workers_ = std::move(keep);
  running_worker_ = nullptr;
}

void Scheduler::fault(const std::string& what) {
  if (!in_kernel_) {
    std::fprintf(stderr, "ScanGrade emulator: %s\n", what.c_str());
    std::abort();
  }
  faulted_ = true;
  fault_message_ = what + "; in " + launch_label();
  Worker* me = running_worker_;
  running_worker_ = nullptr;
  switch_to(&main_, &me->fiber);
  // never resumed: main destroys this worker, which unwinds from switch_to
  std::abort();
}

void Scheduler::signal_fault(int sig, const void* addr, int access) {
  Worker* me = running_worker_;
  signal_.sig = sig;
  signal_.addr = addr;
  signal_.access = access;
  signal_.stack_low = me->stack_low;
  signal_.idx = current_->idx;
  signal_.linear = current_->linear;
  signal_faulted_ = true;
  faulted_ = true;
  me->abandoned = true;
  running_worker_ = nullptr;
  switch_to(&main_, &me->fiber);
  std::abort();  // never resumed
}

std::string Scheduler::signal_report() const {
  const SignalFault& f = signal_;
  const auto a = reinterpret_cast<std::uintptr_t>(f.addr);
  const std::uintptr_t page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  std::string where;
  if (dynamic_region_.guards(f.addr)) where = "just past the end of the dynamic (extern) __shared__ memory";
  else if (static_region_.guards(f.addr)) where = "just past the end of a static __shared__ array";
  else if (f.stack_low != 0 && a < f.stack_low + page && a + (std::uintptr_t{1} << 20) >= f.stack_low)
    where = "below the end of the thread's stack: a stack overflow (deep recursion, or large local arrays, in "
            "device code)";
  else where = describe_address(f.addr);
  char addr[32];
  std::snprintf(addr, sizeof addr, "%p", f.addr);
  const char* what = f.access == 2 ? "a write " : f.access == 1 ? "a read " : "";
  return std::string(f.sig == SIGBUS ? "bus error" : "segmentation fault (invalid memory access)") + " at address " +
         addr + ": " + what + where + " (on a GPU: an illegal memory access, cudaErrorIllegalAddress); in " +
         launch_label() + ", block " + coords(blockIdx) + " thread " + coords(f.idx) + " (warp " +
         std::to_string(f.linear / kWarpSize) + " lane " + std::to_string(f.linear % kWarpSize) + ")";
}

void Scheduler::on_exit(Thread* t) {
  t->state = State::Exited;
  --live_;
  --runnable_;
  Warp& w = warps_[t->linear / kWarpSize];
  std::uint32_t bit = 1u << (t->linear % kWarpSize);
  w.exited |= bit;
  for (std::uint32_t waiting = w.arrived; waiting != 0; waiting &= waiting - 1) {
    unsigned lane = static_cast<unsigned>(__builtin_ctz(waiting));
    if (w.mask[lane] & bit) {
      const Thread& other = threads_[t->linear / kWarpSize * kWarpSize + lane];
      fault(std::string(other.file) + ":" + std::to_string(other.line) + ": " + warp_op_name(w.op[lane]) +
            " with mask " + hex(w.mask[lane]) + " waits for a lane that has exited: " + thread_label(*t) +
            " exited while " + thread_label(other) + " waits there");
    }
  }
  if (at_barrier_ > 0 && at_barrier_ == live_) complete_barrier();
}

// ---- rendezvous ---------------------------------------------------------------------------------

int Scheduler::block_barrier(BarrierOp op, int predicate, const char* file, int line) {
  Thread* t = current_;
  ++rendezvous_;
  t->state = State::Barrier;
  t->file = file;
  t->line = line;
  t->op = static_cast<int>(op);
  --runnable_;
  if (at_barrier_ == 0) {
    barrier_file_ = file;
    barrier_line_ = line;
    barrier_op_ = static_cast<int>(op);
    barrier_mixed_ = false;
    barrier_accum_ = 0;
  } else if (barrier_op_ != static_cast<int>(op) || !same_site(barrier_file_, barrier_line_, file, line)) {
    barrier_mixed_ = true;
  }
  barrier_accum_ += predicate != 0;
  ++at_barrier_;
  if (at_barrier_ == live_) complete_barrier();
  yield();
  switch (op) {
    case BarrierOp::Sync: return 0;
    case BarrierOp::Count: return barrier_count_;
    case BarrierOp::And: return barrier_count_ == barrier_total_;
    case BarrierOp::Or: return barrier_count_ > 0;
  }
  return 0;
}

void Scheduler::complete_barrier() {
  if (barrier_mixed_) {
    // name the sites and how many threads wait at each
    std::vector<std::tuple<const char*, int, int, unsigned, const Thread*>> sites;
    for (const Thread& t : threads_) {
      if (t.state != State::Barrier) continue;
      auto it = std::find_if(sites.begin(), sites.end(), [&](const auto& s) {
        return std::get<2>(s) == t.op && same_site(std::get<0>(s), std::get<1>(s), t.file, t.line);
      });
      if (it == sites.end()) sites.emplace_back(t.file, t.line, t.op, 1u, &t);
      else ++std::get<3>(*it);
    }
    std::string msg = std::string(std::get<0>(sites[0])) + ":" + std::to_string(std::get<1>(sites[0])) +
                      ": divergent barrier: the live threads of block " + coords(blockIdx) +
                      " wait at different barriers:";
    for (const auto& s : sites) {
      msg += " " + std::to_string(std::get<3>(s)) + " thread(s) at " + barrier_name(std::get<2>(s)) + " " +
             std::get<0>(s) + ":" + std::to_string(std::get<1>(s)) + " (first: thread " +
             coords(std::get<4>(s)->idx) + ");";
    }
    msg.pop_back();
    fault(msg);
  }
  barrier_count_ = barrier_accum_;
  barrier_total_ = static_cast<int>(at_barrier_);
  for (Thread& t : threads_) {
    if (t.state == State::Barrier) t.state = State::Runnable;
  }
  runnable_ += at_barrier_;
  at_barrier_ = 0;
  barrier_done_ = true;  // the next thread to run starts the step: the thread order's, not a warp mate
}

std::uint64_t Scheduler::warp_op(WarpOp op, unsigned mask, std::uint64_t value, int arg, int width,
                                 const char* file, int line) {
  Thread* t = current_;
  ++rendezvous_;
  unsigned lane = t->linear % kWarpSize;
  Warp& w = warps_[t->linear / kWarpSize];
  std::uint32_t bit = 1u << lane;
  auto site = [&] { return std::string(file) + ":" + std::to_string(line) + ": " + warp_op_name(static_cast<int>(op)); };
  if ((mask & bit) == 0) {
    fault(site() + " with mask " + hex(mask) + " that does not name the calling lane, in " + thread_label(*t));
  }
  if (mask & w.exited) {
    fault(site() + " with mask " + hex(mask) + " names lanes that have exited (" + hex(mask & w.exited) + "), in " +
          thread_label(*t));
  }
  if (width < 1 || width > 32 || (width & (width - 1)) != 0) {
    fault(site() + " with width " + std::to_string(width) + " (must be a power of two, at most 32), in " +
          thread_label(*t));
  }
  t->state = State::Warp;
  t->file = file;
  t->line = line;
  t->op = static_cast<int>(op);
  --runnable_;
  w.mask[lane] = mask;
  w.op[lane] = static_cast<std::uint8_t>(op);
  w.value[lane] = value;
  w.arg[lane] = arg;
  w.width[lane] = width;
  w.arrived |= bit;
  std::uint32_t group = mask & w.exists;
  if ((w.arrived & group) == group) {
    bool same_mask = true;
    for (std::uint32_t m = group; m != 0; m &= m - 1) {
      unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      if (w.mask[l] != mask) same_mask = false;
    }
    if (same_mask) complete_warp(w, group);
  }
  yield();
  return w.result[lane];
}

void Scheduler::complete_warp(Warp& w, std::uint32_t group) {
  unsigned base = static_cast<unsigned>(&w - warps_.data()) * kWarpSize;
  unsigned first = static_cast<unsigned>(__builtin_ctz(group));
  int op = w.op[first];
  std::uint32_t ballot = 0;
  for (std::uint32_t m = group; m != 0; m &= m - 1) {
    unsigned l = static_cast<unsigned>(__builtin_ctz(m));
    if (w.op[l] != op) {
      const Thread& a = threads_[base + first];
      const Thread& b = threads_[base + l];
      fault(std::string(a.file) + ":" + std::to_string(a.line) + ": lanes of warp " + std::to_string(base / kWarpSize) +
            " in block " + coords(blockIdx) + " meet at different warp operations: " + warp_op_name(op) + " at " +
            a.file + ":" + std::to_string(a.line) + " (lane " + std::to_string(first) + ") and " +
            warp_op_name(w.op[l]) + " at " + b.file + ":" + std::to_string(b.line) + " (lane " + std::to_string(l) +
            ")");
    }
    if (w.value[l] != 0) ballot |= 1u << l;
  }
  auto reduce = [&](auto init, auto fn) {
    auto acc = init;
    for (std::uint32_t m = group; m != 0; m &= m - 1) {
      unsigned l = static_cast<unsigned>(__builtin_ctz(m));
      acc = fn(acc, static_cast<decltype(init)>(w.value[l]));
    }
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(acc));
  };
  std::uint64_t common = 0;
  switch (static_cast<WarpOp>(op)) {
    case WarpOp::Ballot: common = ballot; break;
    case WarpOp::Any: common = ballot != 0; break;
    case WarpOp::All: common = ballot == group; break;
    case WarpOp::ReduceAddU: common = reduce(0u, [](unsigned a, unsigned b) { return a + b; }); break;
    case WarpOp::ReduceMinU: common = reduce(~0u, [](unsigned a, unsigned b) { return std::min(a, b); }); break;
    case WarpOp::ReduceMaxU: common = reduce(0u, [](unsigned a, unsigned b) { return std::max(a, b); }); break;
    case WarpOp::ReduceMinI: common = reduce(0x7fffffff, [](int a, int b) { return std::min(a, b); }); break;
    case WarpOp::ReduceMaxI: common = reduce(int(0x80000000u), [](int a, int b) { return std::max(a, b); }); break;
    case WarpOp::ReduceAnd: common = reduce(~0u, [](unsigned a, unsigned b) { return a & b; }); break;
    case WarpOp::ReduceOr: common = reduce(0u, [](unsigned a, unsigned b) { return a | b; }); break;
    case WarpOp::ReduceXor: common = reduce(0u, [](unsigned a, unsigned b) { return a ^ b; }); break;
    default: break;
  }
  for (std::uint32_t m = group; m != 0; m &= m - 1) {
    unsigned l = static_cast<unsigned>(__builtin_ctz(m));
    unsigned width = static_cast<unsigned>(w.width[l]);
    unsigned seg = l & ~(width - 1);
    unsigned src = l;
    switch (static_cast<WarpOp>(op)) {
      case WarpOp::ShflIdx: src = seg + (static_cast<unsigned>(w.arg[l]) & (width - 1)); break;
      case WarpOp::ShflUp: {
        unsigned delta = static_cast<unsigned>(w.arg[l]);
        src = (l - seg) >= delta ? l - delta : l;
        break;
      }
      case WarpOp::ShflDown: {
        unsigned delta = static_cast<unsigned>(w.arg[l]);
        src = (l - seg) + delta < width ? l + delta : l;
        break;
      }
      case WarpOp::ShflXor: {
        unsigned s = l ^ static_cast<unsigned>(w.arg[l]);
        src = s <= (seg | (width - 1)) ? s : l;
        break;
      }
      default: break;
    }
    switch (static_cast<WarpOp>(op)) {
      case WarpOp::ShflIdx:
      case WarpOp::ShflUp:
      case WarpOp::ShflDown:
      case WarpOp::ShflXor:
        // a source lane outside the group gives the caller's own value
        w.result[l] = (src < kWarpSize && (group >> src) & 1u) ? w.value[src] : w.value[l];
        break;
      default: w.result[l] = common; break;
    }
    threads_[base + l].state = State::Runnable;
  }
  w.arrived &= ~group;
  runnable_ += static_cast<unsigned>(__builtin_popcount(group));
}

unsigned Scheduler::active_mask() const {
  if (!in_kernel_ || current_ == nullptr) return 1u;
  const Warp& w = warps_[current_->linear / kWarpSize];
  return w.exists & ~w.exited;
}

void Scheduler::yield_point() {
  if (!in_kernel_ || current_ == nullptr) return;
  yield();
}

// Warp lockstep: before an access through a volatile lvalue to the block's shared memory, the next
// runnable lane of the warp runs (cyclically, in the thread order's direction), up to its own next
// such access; the lanes of a warp thus make their k-th access in turn, as a warp runs them together.
void Scheduler::volatile_access(const void* addr) {
  if (!lockstep_ || !in_kernel_ || current_ == nullptr) return;
  const auto a = static_cast<const unsigned char*>(addr);
  if (!(a >= static_region_.begin && a < static_region_.end) && !(a >= dynamic_region_.begin && a < dynamic_region_.end))
    return;
  if (Thread* mate = next_in_warp()) {
    ++rendezvous_;
    resume(mate, &running_worker_->fiber);  // back when a lane of the warp hands over to this one
  }
}

// The next runnable lane of the running thread's warp after it, cyclically, in the thread order's
// direction (forward for the random order); nullptr when no other lane can run.
Thread* Scheduler::next_in_warp() {
  const unsigned base = current_->linear / kWarpSize * kWarpSize;
  const unsigned lanes = std::min(kWarpSize, nthreads_ - base);
  const unsigned lane = current_->linear - base;
  const unsigned step = order_kind_ == ThreadOrder::Reverse ? lanes - 1 : 1;
  for (unsigned k = 1; k < lanes; ++k) {
    Thread* t = &threads_[base + (lane + k * step) % lanes];
    if (t->state == State::Runnable) return t;
  }
  return nullptr;
}

void* Scheduler::static_shared_alloc(std::size_t size, std::size_t align) {
  if (!in_kernel_) {
    std::fprintf(stderr, "ScanGrade emulator: a __shared__ variable was used outside a kernel\n");
    std::abort();
  }
  if (align < 16) align = 16;
  std::size_t used = static_cast<std::size_t>(static_region_.end - static_top_);
  std::uintptr_t top = reinterpret_cast<std::uintptr_t>(static_top_);
  std::uintptr_t p = (top - size) & ~(std::uintptr_t(align) - 1);
  std::size_t new_used = static_cast<std::size_t>(reinterpret_cast<std::uintptr_t>(static_region_.end) - p);
  if (size > kSharedPerBlock || new_used > static_limit_) {
    fault("static __shared__ memory of the block needs " + std::to_string(used + size) + " bytes with " +
          std::to_string(dynamic_bytes_) + " bytes of dynamic shared memory; the limit is " +
          std::to_string(kSharedPerBlock) + " bytes in all, in " + thread_label(*current_));
  }
  static_top_ = reinterpret_cast<unsigned char*>(p);
  if (poison_enabled()) std::memset(static_top_, 0xFF, size);
  return static_top_;
}

std::string Scheduler::deadlock_report() const {
  // group the waiting threads by what they wait at
  struct Group {
    State state;
    int op;
    const char* file;
    int line;
    unsigned count;
    const Thread* first;
  };
  std::vector<Group> groups;
  for (const Thread& t : threads_) {
    if (t.state == State::Exited || t.state == State::Runnable) continue;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Group& g) {
      return g.state == t.state && g.op == t.op && same_site(g.file, g.line, t.file, t.line);
    });
    if (it == groups.end()) groups.push_back(Group{t.state, t.op, t.file, t.line, 1, &t});
    else ++it->count;
  }
  std::string msg;
  if (!groups.empty()) msg = std::string(groups[0].file) + ":" + std::to_string(groups[0].line) + ": ";
  msg += "deadlock: no live thread of block " + coords(blockIdx) + " can proceed (" + std::to_string(live_) +
         " live, " + std::to_string(nthreads_ - live_) + " exited):";
  for (const Group& g : groups) {
    const char* what = g.state == State::Barrier ? barrier_name(g.op) : warp_op_name(g.op);
    msg += " " + std::to_string(g.count) + " thread(s) wait at " + what + " " + g.file + ":" + std::to_string(g.line) +
           " (first: thread " + coords(g.first->idx);
    if (g.state == State::Warp) {
      const Warp& w = warps_[g.first->linear / kWarpSize];
      msg += ", mask " + hex(w.mask[g.first->linear % kWarpSize]);
    }
    msg += ");";
  }
  msg.pop_back();
  return msg + "; in " + launch_label();
}

// ---- SIGSEGV / SIGBUS report --------------------------------------------------------------------

alignas(16) unsigned char g_signal_stack[64 * 1024];

void sigsegv_handler(int sig, siginfo_t* info, void* context) {
  Scheduler& s = scheduler();
  const void* addr = info != nullptr ? info->si_addr : nullptr;
  if (s.can_catch_signal()) {
    // a kernel thread touched unmapped memory: a sticky illegal address, the process carries on
    int access = 0;
#if defined(__x86_64__)
    const auto* uc = static_cast<const ucontext_t*>(context);
    access = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0 ? 2 : 1;  // page-fault error code: bit 1 = write
#else
    (void)context;
#endif
    s.signal_fault(sig, addr, access);
  }
  const char* hint = "";
  if (s.dynamic_region().guards(addr)) hint = " (just past the end of the dynamic (extern) __shared__ memory)";
  else if (s.static_region().guards(addr)) hint = " (just past the end of a static __shared__ array)";
  char buf[1024];
  int n = std::snprintf(buf, sizeof buf, "ScanGrade emulator: %s at address %p%s in %s\n",
                        sig == SIGSEGV ? "segmentation fault (invalid memory access)" : "bus error", addr, hint,
                        s.where().c_str());
  if (n > 0) {
    ssize_t ignored = write(STDERR_FILENO, buf, static_cast<std::size_t>(std::min(n, int(sizeof buf) - 1)));
    (void)ignored;
  }
  // SA_RESETHAND restored the default action; put back whatever was installed before us and let
  // the faulting instruction run again.
  sigaction(SIGSEGV, &g_old_segv, nullptr);
  sigaction(SIGBUS, &g_old_bus, nullptr);
}

struct SignalStackInstaller {
  SignalStackInstaller() {
    stack_t ss{};
    ss.ss_sp = g_signal_stack;
    ss.ss_size = sizeof g_signal_stack;
    sigaltstack(&ss, nullptr);
  }
};

}  // namespace

// ---- entry points used by emu_device.h ----------------------------------------------------------

void run_launch(const LaunchConfig& config, const char* file, int line, ThreadBody body, void* closure) {
  static SignalStackInstaller signal_stack;
  scheduler().launch(config, file, line, body, closure);
}

int block_barrier(BarrierOp op, int predicate, const char* file, int line) {
  Scheduler* s = g_scheduler;
  if (s == nullptr || !s->in_kernel()) return predicate != 0;
  return s->block_barrier(op, predicate, file, line);
}

std::uint64_t warp_op(WarpOp op, unsigned mask, std::uint64_t value, int arg, int width, const char* file,
                      int line) {
  Scheduler* s = g_scheduler;
  if (s == nullptr || !s->in_kernel()) return value;
  return s->warp_op(op, mask, value, arg, width, file, line);
}

std::string current_kernel_where() {
  Scheduler* s = g_scheduler;
  return s != nullptr && s->in_kernel() ? s->where() : std::string();
}
bool in_kernel_thread() { return g_scheduler != nullptr && g_scheduler->can_catch_signal(); }

unsigned active_mask() { return scheduler().active_mask(); }
void yield_point() {
  if (g_scheduler != nullptr) g_scheduler->yield_point();
}
void volatile_access(const void* addr) {
  if (g_scheduler != nullptr) g_scheduler->volatile_access(addr);
}

void trap(const char* what, const char* file, int line) {
  scheduler().fault(std::string(file) + ":" + std::to_string(line) + ": " + what);
}

void* static_shared_alloc(std::size_t size, std::size_t align) {
  return scheduler().static_shared_alloc(size, align);
}

}  // namespace scangrade::emu::detail

long long clock64() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace scangrade::emu {

void set_thread_order(ThreadOrder order, std::uint64_t seed) { detail::scheduler().set_order(order, seed); }
ThreadOrder thread_order() { return detail::scheduler().order(); }
void set_warp_lockstep(bool on) { detail::scheduler().set_lockstep(on); }
bool warp_lockstep() { return detail::scheduler().lockstep(); }

const char* to_string(ThreadOrder order) {
  switch (order) {
    case ThreadOrder::Forward: return "forward";
    case ThreadOrder::Reverse: return "reverse";
    case ThreadOrder::Random: return "random";
  }
  return "?";
}

}  // namespace scangrade::emu
