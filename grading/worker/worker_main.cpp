// The grader's worker: the only process that links the student's code. It runs one slot call per
// command from the judge (scangrade_judge) and replies on fd 3.
//
//   worker --channel DIR
//
// Linked with one implementation of scangrade::student::* (the student's objects, or
// reference_as_student.cpp) and harness/src/alloc_tracker.cpp. Only CUDA runtime API calls here, so
// that the same file also builds against the CPU emulation backend (without SCANGRADE_WORKER_TIMING).
// Messages: grading/protocol (README.md there).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
// After the standard and JSON headers: the emulation backend's cuda_runtime.h defines qualifier
// macros (__noinline__) that libstdc++ uses as attribute names.
#include <cuda_runtime.h>

#include "messages.h"
#include "protocol.h"
#include "scangrade/check.h"
#include "scangrade/device_run.h"
#include "scangrade/oracle.h"
#ifdef SCANGRADE_EMULATED
#include "scangrade/emulated_run.h"
#endif
#include "scangrade/implementation.h"
#include "scangrade/inputs.h"
#include "worker_timing.h"

SCANGRADE_IMPLEMENTATION(scangrade_worker_binding, "student", scangrade::student)

namespace scangrade::grader {
namespace {

int g_reply_fd = -1;

void reply(const nlohmann::json& message) { write_line(g_reply_fd, encode(message)); }

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

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

/// mode "check": one guarded call; returns false when this process cannot run more cases. Says
/// {"stage": "ran"} before it writes the output file.
template <typename T>
bool check(const std::string& dir, const Command& c, CheckReply& r) {
  const std::vector<T> input = read_input<T>(dir, c);
  const ScanFn<T> fn = scangrade_worker_binding().get<T>(c.c.slot, c.c.kind);
#ifdef SCANGRADE_EMULATED
  RunRecord<T> run = run_emulated(fn, input);  // under several thread orders: races show
#else
  RunRecord<T> run = run_on_device(fn, input);
#endif
  // the GPU part is over: the judge lets other judges time while this process writes the output
  reply(Stage{c.k, c.nonce});
  copy_run(run, r);
  r.out_bytes = 0;
  if (!run.not_implemented && run.error.empty()) {
    const std::vector<Part> parts = output_parts(run);
    const std::string why = write_parts_atomic(output_path(dir, c.k), parts);
    if (!why.empty()) throw std::runtime_error(why);
    for (const Part& p : parts) r.out_bytes += p.bytes;
  }
  return !run.context_broken;
}

#ifdef SCANGRADE_WORKER_TIMING
/// A timed case's input and the acceptance band of its output (check.h), on the device.
struct Prepared {
  void* input = nullptr;
  void* lo = nullptr;
  void* hi = nullptr;
  void release() {
    for (void* p : {input, lo, hi}) cudaFree(p);
    input = lo = hi = nullptr;
  }
};

/// Timed cases made and copied to the device ahead of their "time" command ("prepare"), by case.
std::map<std::string, Prepared> g_prepared;

/// Makes the case's input, the oracle's result and its band, and copies input and band to the
/// device. False when there is no room on the device (out of memory is not sticky); throws when a
/// copy fails.
template <typename T>
bool make_on_device(const Case& c, Prepared& p) {
  const std::vector<T> input = make_input<T>(c);
  const Band<T> band = acceptance_band(input, c.kind, oracle_scan(input, c.kind));
  const std::size_t bytes = input.size() * sizeof(T) + 1;
  for (void** d : {&p.input, &p.lo, &p.hi})
    if (cudaMalloc(d, bytes) != cudaSuccess) {
      cudaGetLastError();
      p.release();
      return false;
    }
  cudaError_t err = cudaMemcpy(p.input, input.data(), bytes - 1, cudaMemcpyHostToDevice);
  if (err == cudaSuccess) err = cudaMemcpy(p.lo, band.lo.data(), bytes - 1, cudaMemcpyHostToDevice);
  if (err == cudaSuccess) err = cudaMemcpy(p.hi, band.hi.data(), bytes - 1, cudaMemcpyHostToDevice);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    p.release();
    throw std::runtime_error(std::string("copying a timed case to the device: ") + cudaGetErrorString(err));
  }
  return true;
}

std::string prepared_key(const Command& c) {
  return c.c.id + " " + std::string(name(c.c.dtype)) + " " + std::to_string(c.c.n) + " " +
         std::to_string(c.c.seed) + " " + std::string(name(c.c.values));
}
#endif

/// mode "prepare": the input of a later "time" command, made now and left on the device, so that
/// the judge's exclusive hold of the GPU is spent timing. prepared stays false when there is no
/// room on the device (then "time" makes the input itself).
template <typename T>
void prepare(const Command& c, PrepareReply& r) {
#ifdef SCANGRADE_WORKER_TIMING
  const std::string key = prepared_key(c);
  if (g_prepared.count(key)) {
    r.prepared = true;
    return;
  }
  Prepared p;
  if (!make_on_device<T>(c.c, p)) return;
  g_prepared[key] = p;
  r.prepared = true;
#else
  (void)c;
  (void)r;
#endif
}

/// mode "time": the timing object (worker_timing.h); returns false when the context broke.
template <typename T>
bool time(const Command& c, TimeReply& r) {
#ifdef SCANGRADE_WORKER_TIMING
  Prepared p;
  const auto found = g_prepared.find(prepared_key(c));
  if (found != g_prepared.end()) {
    p = found->second;
    g_prepared.erase(found);
  } else if (!make_on_device<T>(c.c, p)) {
    throw std::runtime_error("no room on the device for the timed case");
  }
  const ScanFn<T> fn = scangrade_worker_binding().get<T>(c.c.slot, c.c.kind);
  bool go_on = true;
  try {
    Baselines used;
    const DeviceBand<T> band{static_cast<const T*>(p.lo), static_cast<const T*>(p.hi)};
    r.timing = time_slot<T>(fn, c.c.slot, c.c.kind, static_cast<const T*>(p.input), c.c.n, true, band, c.baselines, used);
    r.baselines = used;
    r.measured = !c.baselines.has_value();
  } catch (const WrongTimedOutput& e) {
    r.wrong_output = e.what();
  } catch (const StudentFault& e) {
    r.error = e.what();
    cudaGetLastError();
    const bool broken = cudaDeviceSynchronize() != cudaSuccess;
    r.context_broken = broken;
    go_on = !broken;
  }
  p.release();
  return go_on;
#else
  (void)c;
  r.harness_error = "this worker was built without timing (SCANGRADE_WORKER_TIMING)";
  return true;
#endif
}

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
        CheckReply r{header};
        const bool go_on = f32 ? check<float>(dir, c, r) : check<std::int32_t>(dir, c, r);
        reply(r);
        return go_on;
      }
      case Mode::Prepare: {
        PrepareReply r{header};
        f32 ? prepare<float>(c, r) : prepare<std::int32_t>(c, r);
        reply(r);
        return true;
      }
      case Mode::Time: {
        TimeReply r{header};
        const bool go_on = f32 ? time<float>(c, r) : time<std::int32_t>(c, r);
        reply(r);
        return go_on;
      }
    }
  } catch (const std::exception& e) {
    header.harness_error = std::string("worker: ") + e.what();
  }
  reply(header);
  return true;
}

int serve(const std::string& dir) {
  const Hello h = hello();
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
