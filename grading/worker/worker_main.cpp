// The grader's worker: the only process that links the student's code. It runs one slot call per
// command from the judge (scangrade_judge) and replies on fd 3. Protocol: protocol.h.
//
//   worker --channel DIR
//
// Linked with one implementation of scangrade::student::* (the student's objects, or
// reference_as_student.cpp) and harness/src/alloc_tracker.cpp. Only CUDA runtime API calls here, so
// that the same file also builds against the CPU emulation backend (without SCANGRADE_WORKER_TIMING).
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

#include "protocol.h"
#include "scangrade/device_run.h"
#ifdef SCANGRADE_EMULATED
#include "scangrade/emulated_run.h"
#endif
#include "scangrade/implementation.h"
#include "scangrade/inputs.h"
#include "worker_timing.h"

SCANGRADE_IMPLEMENTATION(scangrade_worker_binding, "student", scangrade::student)

namespace scangrade::grader {
namespace {

using nlohmann::json;

int g_reply_fd = -1;

void reply(const json& j) {
  // replace: a student's exception text need not be UTF-8
  write_line(g_reply_fd, j.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

json hello() {
  json h = {{"hello", 1}, {"device", ""}, {"driver", ""}, {"cuda_runtime", ""}, {"error", ""}};
  if (const auto why = device_unavailable()) {
    h["error"] = *why;
    return h;
  }
  h["device"] = device_description();
#ifdef SCANGRADE_EMULATED
  h["cuda_runtime"] = "emulated (CUDART_VERSION " + std::to_string(CUDART_VERSION) + ")";
#else
  int driver = 0, runtime = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess) h["driver"] = version_text(driver);
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess) h["cuda_runtime"] = version_text(runtime);
#endif
  return h;
}

/// A command the judge sent; throws std::runtime_error when it is malformed (a harness fault).
struct Command {
  std::uint64_t k = 0;
  std::string nonce, mode;
  Slot slot = Slot::HillisSteele;
  DType dtype = DType::Int32;
  ScanKind kind = ScanKind::Inclusive;
  std::uint64_t n = 0;
  // "prepare" and "time": the input is made here from the case (inputs.h); "time": the baselines
  // may be given
  std::string id;
  ValueKind values = ValueKind::Random;
  std::uint64_t seed = 0;
#ifdef SCANGRADE_WORKER_TIMING
  std::optional<Baselines> baselines;
#endif
};

Command parse_command(const std::string& line) {
  const json j = json::parse(line);
  Command c;
  c.k = j.at("k").get<std::uint64_t>();
  c.nonce = j.at("nonce").get<std::string>();
  c.mode = j.at("mode").get<std::string>();
  const auto slot = parse_slot(j.at("slot").get<std::string>());
  const auto dtype = parse_dtype(j.at("dtype").get<std::string>());
  const auto kind = parse_kind(j.at("kind").get<std::string>());
  if (!slot || !dtype || !kind) throw std::runtime_error("unknown slot, dtype or kind in command: " + line);
  c.slot = *slot;
  c.dtype = *dtype;
  c.kind = *kind;
  c.n = j.at("n").get<std::uint64_t>();
  if (c.mode == "time" || c.mode == "prepare") {
    c.id = j.at("id").get<std::string>();
    const auto values = parse_value_kind(j.at("values").get<std::string>());
    if (!values) throw std::runtime_error("unknown values in command: " + line);
    c.values = *values;
    c.seed = j.at("seed").get<std::uint64_t>();
#ifdef SCANGRADE_WORKER_TIMING
    if (const json& b = j.at("baselines"); !b.is_null())
      c.baselines = Baselines{b.at("reference_ms").get<double>(), b.at("cub_ms").get<double>(),
                              b.at("copy_ms").get<double>()};
#endif
  }
  return c;
}

template <typename T>
std::vector<T> read_input(const std::string& dir, const Command& c) {
  std::vector<T> input(c.n);
  const std::string why = read_parts(input_path(dir, c.k), {Part{input.data(), c.n * sizeof(T)}});
  if (!why.empty()) throw std::runtime_error(why);
  return input;
}

/// mode "check": one guarded call; returns false when this process cannot run more cases. Says
/// {"stage": "ran"} before it writes the output file.
template <typename T>
bool check(const std::string& dir, const Command& c, json& r) {
  const std::vector<T> input = read_input<T>(dir, c);
  const ScanFn<T> fn = scangrade_worker_binding().get<T>(c.slot, c.kind);
#ifdef SCANGRADE_EMULATED
  RunRecord<T> run = run_emulated(fn, input);  // under several thread orders: races show
#else
  RunRecord<T> run = run_on_device(fn, input);
#endif
  // the GPU part is over: the judge lets other judges time while this process writes the output
  reply({{"k", c.k}, {"nonce", c.nonce}, {"stage", "ran"}});
  r["not_implemented"] = run.not_implemented;
  r["race"] = run.race;
  r["error"] = run.error;
  r["context_broken"] = run.context_broken;
  r["leaked_bytes"] = run.leaked_bytes;
  r["leak_detail"] = run.leak_detail;
  r["out_bytes"] = 0;
  if (!run.not_implemented && run.error.empty()) {
    const auto part = [](std::vector<T>& v) { return Part{v.data(), v.size() * sizeof(T)}; };
    const std::vector<Part> parts = {part(run.output), part(run.guard_before), part(run.guard_after),
                                     part(run.input_after)};
    const std::string why = write_parts_atomic(output_path(dir, c.k), parts);
    if (!why.empty()) throw std::runtime_error(why);
    std::uint64_t bytes = 0;
    for (const Part& p : parts) bytes += p.bytes;
    r["out_bytes"] = bytes;
  }
  return !run.context_broken;
}

/// The input a "time" command times: made from the command's case (no file: a timed input is not
/// checked).
template <typename T>
std::vector<T> timed_input(const Command& c) {
  Case ic;
  ic.id = c.id;
  ic.slot = c.slot;
  ic.dtype = c.dtype;
  ic.kind = c.kind;
  ic.n = c.n;
  ic.values = c.values;
  ic.seed = c.seed;
  return make_input<T>(ic);
}

#ifdef SCANGRADE_WORKER_TIMING
/// Inputs made and copied to the device ahead of their "time" command ("prepare"), by case.
std::map<std::string, void*> g_prepared;

std::string prepared_key(const Command& c) {
  return c.id + " " + std::string(name(c.dtype)) + " " + std::to_string(c.n) + " " + std::to_string(c.seed) + " " +
         std::string(name(c.values));
}
#endif

/// mode "prepare": the input of a later "time" command, made now and left on the device, so that
/// the judge's exclusive hold of the GPU is spent timing. Sets "prepared" (false when there is no
/// room on the device: then "time" makes the input itself).
template <typename T>
void prepare(const Command& c, json& r) {
  r["prepared"] = false;
#ifdef SCANGRADE_WORKER_TIMING
  const std::string key = prepared_key(c);
  if (g_prepared.count(key)) {
    r["prepared"] = true;
    return;
  }
  const std::vector<T> input = timed_input<T>(c);
  void* d = nullptr;
  if (cudaMalloc(&d, input.size() * sizeof(T) + 1) != cudaSuccess) {
    cudaGetLastError();  // out of memory is not sticky
    return;
  }
  cudaError_t err = cudaMemcpy(d, input.data(), input.size() * sizeof(T), cudaMemcpyHostToDevice);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  if (err != cudaSuccess) {
    cudaFree(d);
    throw std::runtime_error(std::string("copying a timed input to the device: ") + cudaGetErrorString(err));
  }
  g_prepared[key] = d;
  r["prepared"] = true;
#else
  (void)c;
#endif
}

/// mode "time": the timing object (worker_timing.h); returns false when the context broke.
template <typename T>
bool time(const Command& c, json& r) {
  r["timing"] = nullptr;
  r["context_broken"] = false;
#ifdef SCANGRADE_WORKER_TIMING
  std::vector<T> host;
  const T* input = nullptr;
  const auto found = g_prepared.find(prepared_key(c));
  const bool on_device = found != g_prepared.end();
  if (on_device) {
    input = static_cast<const T*>(found->second);
  } else {
    host = timed_input<T>(c);
    input = host.data();
  }
  const ScanFn<T> fn = scangrade_worker_binding().get<T>(c.slot, c.kind);
  bool go_on = true;
  try {
    Baselines used;
    r["timing"] = time_slot<T>(fn, c.slot, c.kind, input, c.n, on_device, c.baselines, used);
    r["baselines"] = {{"reference_ms", used.reference_ms}, {"cub_ms", used.cub_ms}, {"copy_ms", used.copy_ms},
                      {"measured", !c.baselines.has_value()}};
  } catch (const StudentFault& e) {
    r["error"] = e.what();
    cudaGetLastError();
    const bool broken = cudaDeviceSynchronize() != cudaSuccess;
    r["context_broken"] = broken;
    go_on = !broken;
  }
  if (on_device) {
    cudaFree(found->second);
    g_prepared.erase(found);
  }
  return go_on;
#else
  (void)c;
  r["harness_error"] = "this worker was built without timing (SCANGRADE_WORKER_TIMING)";
  return true;
#endif
}

int serve(const std::string& dir) {
  const json h = hello();
  reply(h);
  if (!h["error"].get<std::string>().empty()) return 0;  // the judge reads the reason from hello

  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    json r = {{"k", nullptr}, {"nonce", ""}, {"error", ""}, {"harness_error", ""}, {"context_broken", false}};
    bool go_on = true;
    try {
      const Command c = parse_command(line);
      r["k"] = c.k;
      r["nonce"] = c.nonce;
      const bool f32 = c.dtype == DType::Float32;
      if (c.mode == "check") {
        go_on = f32 ? check<float>(dir, c, r) : check<std::int32_t>(dir, c, r);
      } else if (c.mode == "prepare") {
        f32 ? prepare<float>(c, r) : prepare<std::int32_t>(c, r);
      } else if (c.mode == "time") {
        go_on = f32 ? time<float>(c, r) : time<std::int32_t>(c, r);
      } else {
        r["harness_error"] = "unknown mode '" + c.mode + "'";
      }
    } catch (const std::exception& e) {
      r["harness_error"] = std::string("worker: ") + e.what();
    }
    reply(r);
    if (!go_on) return 0;  // a sticky CUDA error: only a fresh process can run more cases
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
