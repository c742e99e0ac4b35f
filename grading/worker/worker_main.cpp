// The grader's worker: the only process that links the student's code. It runs one slot call per
// command from the judge (scangrade_judge) and replies on fd 3.
//
//   worker --channel DIR
//
// Linked with one implementation of scangrade::student::* (the student's objects, or
// reference_as_student.cpp) and harness/src/alloc_tracker.cpp. Only CUDA runtime API calls here, so
// that the same file also builds against the CPU emulation backend (without SCANGRADE_WORKER_TIMING).
// Messages: grading/protocol (README.md there).
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
// After the standard and JSON headers: the emulation backend's cuda_runtime.h defines qualifier
// macros (__noinline__) that libstdc++ uses as attribute names.
#include <cuda_runtime.h>

#include "messages.h"
#include "protocol.h"
#include "timing_method.h"  // the benchmark-only variation
#include "scangrade/check.h"
#include "scangrade/device_run.h"
#include "scangrade/oracle.h"
#ifdef SCANGRADE_EMULATED
#include "scangrade/emulated_run.h"
#endif
#include "scangrade/implementation.h"
#include "scangrade/inputs.h"
#include "fd_passing.h"
#include "policy_monitor.h"
#ifdef SCANGRADE_EMULATED
#include "scangrade/emu.h"
#include "scangrade/emu_slack.h"
#else
#include "vmm.h"
#endif

SCANGRADE_IMPLEMENTATION(scangrade_worker_binding, "student", scangrade::student)

namespace scangrade::grader {
namespace {

int g_reply_fd = -1;

void reply(const nlohmann::json& message) { write_line(g_reply_fd, encode(message)); }

#ifndef SCANGRADE_EMULATED
std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
#endif

Hello hello() {
  Hello h;
  if (const auto why = device_unavailable()) {
    h.error = *why;
    return h;
  }
  h.device = device_description();
#ifdef SCANGRADE_EMULATED
  h.cuda_runtime = "emulated (CUDART_VERSION " + std::to_string(CUDART_VERSION) + ")";
#else
  int driver = 0, runtime = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess) h.driver = version_text(driver);
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) h.cuda_runtime = version_text(runtime);
#endif
  return h;
}

template <typename T>
std::vector<T> read_input(const std::string& dir, const Command& c) {
  std::vector<T> input(c.c.n);
  const std::string why = read_parts(input_path(dir, c.k), {Part{input.data(), c.c.n * sizeof(T)}});
  if (!why.empty()) throw std::runtime_error(why);
  return input;
}

/// The buffers the trusted side shares for one command, mapped here (shared_buffers: the
/// descriptors arrive on the reply socket just before the command).
class SharedMappings {
 public:
  SharedMappings(const Command& c) {
    std::string byte;
    std::vector<int> fds;
    if (!receive_with_fds(g_reply_fd, byte, fds, 1)) throw std::runtime_error("the case buffers did not arrive");
    fds_ = fds;
    sizes_ = c.sizes;
    if (fds.size() != c.sizes.size()) throw std::runtime_error("the case buffers do not match the command");
    for (std::size_t i = 0; i < fds.size(); ++i) {
#ifdef SCANGRADE_EMULATED
      // in the emulator's device arena, with its guard after the slack: a wild write faults as an
      // illegal address instead of landing in the other buffer or the host heap
      void* p = emu::map_shared_memory(fds[i], c.sizes[i]);
      if (p == nullptr) throw std::runtime_error(std::string("mapping a case buffer: ") + std::strerror(errno));
      maps_.push_back({p, c.sizes[i]});
#else
      vmm::Mapping m;
      if (const std::string why = vmm::import(fds[i], c.sizes[i], m); !why.empty())
        throw std::runtime_error("mapping a case buffer: " + why);
      maps_.push_back(m);
#endif
    }
  }
  ~SharedMappings() {
    for (auto& m : maps_) {
#ifdef SCANGRADE_EMULATED
      emu::unmap_shared_memory(m.ptr);
#else
      vmm::release(m);
#endif
    }
    for (int fd : fds_) close(fd);
  }
  SharedMappings(const SharedMappings&) = delete;
  SharedMappings& operator=(const SharedMappings&) = delete;
  template <typename T>
  T* at(std::size_t i) const { return static_cast<T*>(maps_.at(i).ptr); }
  const std::vector<std::uint64_t>& sizes() const { return sizes_; }

 private:
#ifdef SCANGRADE_EMULATED
  struct Mapping {
    void* ptr;
    std::size_t size;
  };
  std::vector<Mapping> maps_;
#else
  std::vector<vmm::Mapping> maps_;
#endif
  std::vector<int> fds_;
  std::vector<std::uint64_t> sizes_;
};

#ifndef SCANGRADE_EMULATED
/// Gives the device's pools' unused memory back to the driver after a checked call, so that the
/// judge's outside view (grading/judge/outside.h: the driver's count of this process's device
/// memory) sees only what the call left allocated, not what a pool keeps for the next call.
void trim_pools() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return;
  cudaMemPool_t pool;
  if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) cudaMemPoolTrimTo(pool, 0);
  if (cudaDeviceGetMemPool(&pool, device) == cudaSuccess) cudaMemPoolTrimTo(pool, 0);
}
#endif

#ifdef SCANGRADE_EMULATED
/// A write the call made into the slack around its own allocations (Command::watch_slack); stops watching.
template <typename T>
void take_stray_write(RunRecord<T>& run) {
  if (run.error.empty() && !run.not_implemented) run.stray_write = emu::slack_write();
  emu::watch_slack(false);
}
#endif

/// The buffers of the last shared check, kept mapped for the next one (Command::kept).
std::unique_ptr<SharedMappings> g_check_buffers;

/// mode "check": one guarded call; returns false when this process cannot run more cases.
/// Shared buffers: the output stays where the trusted side reads it. Local buffers (compute-
/// sanitizer runs): the input comes from the channel folder and no output goes back.
template <typename T>
bool check(const std::string& dir, const Command& c, CheckReply& r) {
  const ScanFn<T> fn = scangrade_worker_binding().get<T>(c.c.slot, c.c.kind);
  RunRecord<T> run;
  policy::Findings findings;
  bool monitored = false;
  if (c.shared) {
    if (c.sizes.size() != 2 || c.sizes[0] < c.c.n * sizeof(T) || c.sizes[1] < (c.c.n + 2 * kGuardElements) * sizeof(T))
      throw std::runtime_error("the case buffers are smaller than the case");
    if (!c.kept) {
      g_check_buffers.reset();
      g_check_buffers = std::make_unique<SharedMappings>(c);
    } else if (!g_check_buffers || g_check_buffers->sizes() != c.sizes) {
      throw std::runtime_error("the command names kept case buffers that this worker does not hold");
    }
    const SharedMappings& buffers = *g_check_buffers;
    policy::begin(c.c.slot, std::int64_t(c.c.n * sizeof(T)),
                  {{buffers.at<const T>(0), c.sizes[0]}, {buffers.at<T>(1), c.sizes[1]}});
    monitored = true;
#ifdef SCANGRADE_EMULATED
    emu::watch_slack(c.watch_slack);
    set_reverse_only(c.reverse);
    run = run_emulated_in_place(fn, buffers.at<const T>(0), buffers.at<T>(1), c.c.n,
                                [&findings] { findings = policy::end(); });
    set_reverse_only(false);
    take_stray_write(run);
    g_check_buffers.reset();  // host memory: nothing to keep
#else
    run = run_in_place(fn, buffers.at<const T>(0), buffers.at<T>(1) + kGuardElements, c.c.n);
    findings = policy::end();
    trim_pools();
#endif
  } else {
    const std::vector<T> input = read_input<T>(dir, c);
#ifdef SCANGRADE_EMULATED
    emu::watch_slack(c.watch_slack);
    set_reverse_only(c.reverse);
    run = run_emulated(fn, input);
    set_reverse_only(false);
    take_stray_write(run);
#else
    run = run_on_device(fn, input);
#endif
  }
  copy_run(run, r);
  if (monitored) {
    r.policy = findings.violation;
    r.policy_rule = findings.rule;
    if (findings.pinned_leaked_bytes > 0 && run.error.empty() && !run.not_implemented) {
      r.leaked_bytes += findings.pinned_leaked_bytes;
      r.leak_detail += ", " + findings.pinned_detail;
    }
  }
  return !run.context_broken;
}

#ifndef SCANGRADE_EMULATED
/// The timed calls of one case (time_begin .. time_end): the trusted side's two input/output pairs,
/// a stream and two events.
struct Timed {
  std::unique_ptr<SharedMappings> buffers;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  ~Timed() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }
};
std::unique_ptr<Timed> g_timed;

/// The runtime configuration every timed call gets, the one the checker's reference runs with
/// (reference/host_utils.h, keep_pool_memory): the device's default memory pool keeps what
/// cudaFreeAsync gives back for the next cudaMallocAsync (release threshold: everything) instead of
/// returning it to the driver at every synchronization. A slot that allocates temporaries per call
/// then pays the mapping once, as the reference does, not on every timed call. As there, a device
/// without memory pools only loses that time (the error is cleared).
void configure_timed_runtime() {
  if (timing::bench_variation().default_pool) return;  // benchmark-only: the runtime's defaults
  int device = 0;
  cudaMemPool_t pool = nullptr;
  std::uint64_t keep = ~std::uint64_t{0};
  const bool ok = cudaGetDevice(&device) == cudaSuccess && cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess &&
                  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) == cudaSuccess;
  if (!ok) cudaGetLastError();
}

void time_begin(const Command& c) {
  g_timed.reset();
  configure_timed_runtime();
  if (c.sizes.size() != 4) throw std::runtime_error("time_begin needs four buffers");
  for (std::uint64_t s : c.sizes)
    if (s < c.c.n * 4) throw std::runtime_error("the timed buffers are smaller than the case");
  auto t = std::make_unique<Timed>();
  t->buffers = std::make_unique<SharedMappings>(c);
  check_cuda(cudaStreamCreateWithFlags(&t->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", "timing setup");
  check_cuda(cudaEventCreate(&t->start), "cudaEventCreate", "timing setup");
  check_cuda(cudaEventCreate(&t->stop), "cudaEventCreate", "timing setup");
  g_timed = std::move(t);
}

/// One timed call on pair c.call (or, for -1, none: the judge measures its own overhead).
template <typename T>
bool time_call(const Command& c, TimeCallReply& r) {
  if (!g_timed) throw std::runtime_error("time_call without time_begin");
  Timed& t = *g_timed;
  // The checker's context just used the GPU: one event through this context first, so that the
  // switch back is not in the host clock (and is in the judge's empty calls as in the real ones).
  check_cuda(cudaEventRecord(t.start, t.stream), "cudaEventRecord", "timing");
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize", "timing");
  if (c.call < 0) return true;
  const ScanFn<T> fn = scangrade_worker_binding().get<T>(c.c.slot, c.c.kind);
  // pair 1 starts `shift` bytes into its buffers under the benchmark-only variation (none when grading)
  const std::size_t skip = c.call == 1 ? timing::bench_variation().shift / sizeof(T) : 0;
  const T* in = t.buffers->at<const T>(static_cast<std::size_t>(c.call)) + skip;
  T* out = t.buffers->at<T>(2 + static_cast<std::size_t>(c.call)) + skip;
  const auto host_start = std::chrono::steady_clock::now();
  check_cuda(cudaEventRecord(t.start, t.stream), "cudaEventRecord", "timing");
  try {
    fn(in, out, c.c.n, t.stream);
  } catch (const std::exception& e) {
    r.error = std::string("the call threw an exception: ") + e.what();
  } catch (...) {
    r.error = "the call threw a non-standard exception";
  }
  cudaError_t err = cudaEventRecord(t.stop, t.stream);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  if (err == cudaSuccess) err = cudaGetLastError();
  const auto host_stop = std::chrono::steady_clock::now();
  if (r.error.empty() && err != cudaSuccess)
    r.error = std::string("CUDA error after the call: ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
  if (!r.error.empty()) {
    cudaGetLastError();
    r.context_broken = cudaDeviceSynchronize() != cudaSuccess;
    return !r.context_broken;
  }
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, t.start, t.stop), "cudaEventElapsedTime", "timing");
  r.event_ms = ms;
  r.host_ms = std::chrono::duration<double, std::milli>(host_stop - host_start).count();
  return true;
}
#endif

/// Runs one command line; returns false when this process cannot run more cases (a sticky CUDA
/// error). Every failure of the harness becomes the reply's harness_error.
bool run_command(const std::string& dir, const std::string& line) {
  ReplyHeader header;
  try {
    const Command c = nlohmann::json::parse(line).get<Command>();
    header.k = c.k;
    header.nonce = c.nonce;
    const bool f32 = c.c.dtype == DType::Float32;
    switch (c.mode) {
      case Mode::Check: {
        CheckReply r;
        static_cast<ReplyHeader&>(r) = header;
        const bool go_on = f32 ? check<float>(dir, c, r) : check<std::int32_t>(dir, c, r);
        reply(r);
        return go_on;
      }
#ifdef SCANGRADE_EMULATED
      case Mode::TimeBegin:
      case Mode::TimeCall:
      case Mode::TimeEnd:
        header.harness_error = "worker: the CPU emulation backend has no timing";
        break;
#else
      case Mode::TimeBegin: {
        time_begin(c);
        reply(header);
        return true;
      }
      case Mode::TimeCall: {
        TimeCallReply r;
        static_cast<ReplyHeader&>(r) = header;
        const bool go_on = f32 ? time_call<float>(c, r) : time_call<std::int32_t>(c, r);
        reply(r);
        return go_on;
      }
      case Mode::TimeEnd: {
        g_timed.reset();
        reply(header);
        return true;
      }
#endif
    }
  } catch (const std::exception& e) {
    header.harness_error = std::string("worker: ") + e.what();
  }
  reply(header);
  return true;
}

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// When this process first ran code of its own (Hello::loaded_ns): before the C++ library's and
/// the student's constructors.
std::int64_t g_loaded_ns = 0;
__attribute__((constructor(101))) void note_loaded() { g_loaded_ns = steady_ns(); }

int serve(const std::string& dir) {
  using Ms = std::chrono::duration<double, std::milli>;
  const auto t0 = std::chrono::steady_clock::now();
  Hello h = hello();
  const auto t1 = std::chrono::steady_clock::now();
  if (h.error.empty()) h.monitor = policy::install();  // before any call of the student's
  h.device_ms = Ms(t1 - t0).count();
  h.monitor_ms = Ms(std::chrono::steady_clock::now() - t1).count();
  h.loaded_ns = g_loaded_ns;
  h.sent_ns = steady_ns();
  reply(h);
  if (!h.error.empty()) return 0;  // the judge reads the reason from hello

  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    if (!run_command(dir, line)) return 0;  // a sticky CUDA error: only a fresh process can run more cases
  }
  return 0;
}

}  // namespace
}  // namespace scangrade::grader

int main(int argc, char** argv) {
  scangrade::grader::reuse_large_buffers();
  std::string dir;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--channel" && i + 1 < argc) {
      dir = argv[++i];
    } else if (arg == "--help" || arg == "-h") {
      std::printf("usage: %s --channel DIR\n  The grader's worker: started by scangrade_judge, which sends commands on "
                  "stdin and reads replies on fd 3.\n",
                  argv[0]);
      return 0;
    } else {
      std::fprintf(stderr, "worker: unknown argument '%s' (usage: --channel DIR)\n", arg.c_str());
      return 2;
    }
  }
  if (dir.empty()) {
    std::fprintf(stderr, "worker: --channel DIR is required\n");
    return 2;
  }
  // Move the reply pipe off fd 3 (close-on-exec), so that a stray write(3, ...) by the student's code
  // fails instead of interleaving with replies.
  scangrade::grader::g_reply_fd = fcntl(scangrade::grader::kReplyFd, F_DUPFD_CLOEXEC, 100);
  if (scangrade::grader::g_reply_fd < 0) {
    std::fprintf(stderr, "worker: fd 3 is not open: this program is started by scangrade_judge\n");
    return 2;
  }
  close(scangrade::grader::kReplyFd);
  return scangrade::grader::serve(dir);
}
