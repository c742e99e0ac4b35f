// The judge <-> worker messages (README.md in this folder): one struct per message, and the only
// code that turns them into JSON lines and back (nlohmann to_json / from_json). The worker, the
// judge and the tests' fake worker all use these.
//
// Decoding fails closed: a missing field, a field of the wrong type (no conversions: a boolean is
// not a number, a float is not a count) or an unknown key in the timing object throws
// MessageError, whose text the judge puts in its "incomplete or garbled" message.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "scangrade/check.h"
#include "scangrade/suite.h"

namespace scangrade::grader {

/// The most buffers one command shares with the worker.
inline constexpr std::size_t kMaxSharedBuffers = 4;

/// A message that does not have the protocol's fields.
struct MessageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// worker -> judge, once, first: the device, or why this machine cannot run kernels.
/// Decoding: "hello" must be 1 and "error" a string; a missing or non-string device, driver or
/// cuda_runtime reads as "".
struct Hello {
  std::string device, driver, cuda_runtime;
  std::string error;  // non-empty: no kernel can run here
  std::string monitor;  // why the policy monitor is off ("" when it watches every call)
  double device_ms = 0;   // what the worker's start spent on its CUDA context (device_unavailable)
  double monitor_ms = 0;  // and on installing the policy monitor (CUPTI)
  /// steady-clock nanoseconds (CLOCK_MONOTONIC, the same in every process of the machine): when the
  /// worker first ran code of its own (its earliest constructor), and when it sent this hello; 0:
  /// not known. The judge compares them with its own start of the worker.
  std::int64_t loaded_ns = 0, sent_ns = 0;
};

/// Medians (ms) of the baselines of one case on one GPU.
struct Baselines {
  double reference_ms = 0, cub_ms = 0, copy_ms = 0;
};

/// check: one guarded slot call. time_begin / time_call / time_end: the timed calls of one case
/// (README.md): the buffers come from the trusted side, the judge's clock bounds every call.
enum class Mode { Check, TimeBegin, TimeCall, TimeEnd };

/// judge -> worker, one per line on the worker's stdin.
struct Command {
  std::uint64_t k = 0;  // numbers the command (and its files in the channel folder)
  std::string nonce;    // fresh per command: a reply must repeat it
  Mode mode = Mode::Check;
  Case c{};             // slot, dtype, kind, n
  /// check: true when the buffers are the trusted side's (their descriptors arrive on fd 3 just
  /// before the command: the input, then the output zone); false: the worker reads the input from
  /// DIR/in-K.bin into buffers of its own and returns no output (compute-sanitizer runs).
  /// time_begin: always shared (in 0, in 1, out 0, out 1).
  bool shared = false;
  /// check, shared: the buffers of the worker's previous shared check, which it keeps mapped (no
  /// descriptors arrive; the trusted side filled them afresh, sizes as before).
  bool kept = false;
  std::vector<std::uint64_t> sizes;  // bytes of each shared buffer, in the order of the descriptors
  int call = -1;                     // time_call: the buffer pair (0 or 1), or -1: no slot call (calibration)
  /// check, emulation workers: watch the slack around the allocations the call makes (a case that
  /// memcheck checks on a GPU): a write there is replied as stray_write.
  bool watch_slack = false;
  /// check, emulation workers: run the call once in the reverse thread order, with no order compared
  /// (the judge's second look at a case whose forward order got the data wrong: order_verdict).
  bool reverse = false;
};

/// worker -> judge: the GPU part of a check is over (at most once, before its reply).
struct Stage {
  std::uint64_t k = 0;
  std::string nonce;
  std::string stage = "ran";
};

/// What every reply has. k is null when the command could not be read.
struct ReplyHeader {
  std::optional<std::uint64_t> k;
  std::string nonce;
  std::string error;          // the student's code failed (exception text, CUDA error)
  std::string harness_error;  // the worker could not run the command (a harness fault)
  bool context_broken = false;
};

/// The reply to "check". The output stays in the trusted side's buffers: the judge reads it there.
struct CheckReply : ReplyHeader {
  bool not_implemented = false;
  std::string not_implemented_at;  // "student/x.cu:N": the call's line, as the student's process says
  std::int64_t leaked_bytes = 0;
  std::string leak_detail;
  std::string race;  // emulation workers: non-empty when the thread orders' results differ
  std::string not_recomputed;  // emulation workers: a repeated call left the result unwritten
  std::string stray_write;     // emulation workers: a write next to an allocation the slot made
  std::string undefined;       // emulation workers: operations C++ leaves undefined that the call ran
  std::string policy;          // what the worker's policy monitor saw ("" when nothing), evidence
  std::string policy_rule;     // its rule: host_compute, library, launch
};

/// Copies the fields a run record (check.h) and a CheckReply share, either way: the worker puts
/// its run in the reply, the judge takes it back out (output, guards and the input after the call
/// travel in DIR/out-K.bin).
template <typename From, typename To>
void copy_run(const From& from, To& to) {
  to.not_implemented = from.not_implemented;
  to.not_implemented_at = from.not_implemented_at;
  to.error = from.error;
  to.context_broken = from.context_broken;
  to.leaked_bytes = from.leaked_bytes;
  to.leak_detail = from.leak_detail;
  to.race = from.race;
  to.not_recomputed = from.not_recomputed;
  to.stray_write = from.stray_write;
  to.undefined = from.undefined;
}

/// The results schema's `timing` object (grading/results.schema.json): exactly these keys.
struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  std::int64_t reps = 0;  // >= 1
  double spread = 0, gbps = 0, copy_gbps = 0, fraction_of_copy = 0;
  double reference_ms = 0, cub_ms = 0, ratio_to_reference = 0, ratio_to_cub = 0;
  std::string method;
  /// The 95% interval of ratio_to_reference (the median of paired ratios), when it was measured so.
  std::optional<std::pair<double, double>> ratio_interval;
  /// Which clock the median is from ("events", "host", or "judge": the median reported time was
  /// below the median of the judge's bounds), how many calls counted as their bound, and the worker
  /// path's calibrated overhead the bound takes off the judge's clock ("" / 0: not measured so).
  std::string clock;
  std::int64_t raised_to_bound = 0;
  double judge_overhead_ms = 0;
  /// Why the GPU's fair share stopped the series early ("" when it did not).
  std::string stopped;
};

/// The reply to "time_call": the times the worker measured itself (evidence: the judge's own clock
/// bounds them). Decoding: both numbers, finite and >= 0.
struct TimeCallReply : ReplyHeader {
  double event_ms = 0;  // CUDA events around the call on its stream
  double host_ms = 0;   // the worker's host clock between two cudaDeviceSynchronize calls
};

std::string name(Mode m);

void to_json(nlohmann::json& j, const Hello& m);
void from_json(const nlohmann::json& j, Hello& m);
void to_json(nlohmann::json& j, const Baselines& m);
void from_json(const nlohmann::json& j, Baselines& m);
void to_json(nlohmann::json& j, const Command& m);
void from_json(const nlohmann::json& j, Command& m);
void to_json(nlohmann::json& j, const Stage& m);
void from_json(const nlohmann::json& j, Stage& m);
void to_json(nlohmann::json& j, const ReplyHeader& m);
void to_json(nlohmann::json& j, const CheckReply& m);
/// Messages: "a field is missing or has the wrong type", "field 'race' is not a string".
void from_json(const nlohmann::json& j, CheckReply& m);
void to_json(nlohmann::json& j, const Timing& m);
void from_json(const nlohmann::json& j, Timing& m);
void to_json(nlohmann::json& j, const TimeCallReply& m);
/// Messages: "a field of the time_call reply is missing or has the wrong type".
void from_json(const nlohmann::json& j, TimeCallReply& m);

/// True when `reply` is an object whose k and nonce are the command's.
bool answers(const nlohmann::json& reply, const Command& command);
/// A reply's harness_error ("" when absent); throws MessageError when it is not a string.
std::string harness_error_of(const nlohmann::json& reply);

/// One message as one line (no newline); text that is not UTF-8 is replaced, never an error.
std::string encode(const nlohmann::json& message);

}  // namespace scangrade::grader
