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

#include <nlohmann/json.hpp>

#include "scangrade/check.h"
#include "scangrade/suite.h"

namespace scangrade::grader {

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
};

/// Medians (ms) of the baselines of one case on one GPU.
struct Baselines {
  double reference_ms = 0, cub_ms = 0, copy_ms = 0;
};

enum class Mode { Check, Prepare, Time };

/// judge -> worker, one per line on the worker's stdin.
struct Command {
  std::uint64_t k = 0;  // numbers the command (and its files in the channel folder)
  std::string nonce;    // fresh per command: a reply must repeat it
  Mode mode = Mode::Check;
  /// check: slot, dtype, kind, n. prepare and time: also id, values and seed (the input's seed, the
  /// secret mixed in), from which the worker makes the input itself.
  Case c{};
  /// time (and prepare, in timing workers: see README.md): the cached baselines, or none (measure
  /// them).
  std::optional<Baselines> baselines;
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

/// The reply to "check". The output file DIR/out-K.bin holds out_bytes bytes (0 when there is none).
struct CheckReply : ReplyHeader {
  bool not_implemented = false;
  std::int64_t leaked_bytes = 0;
  std::string leak_detail;
  std::uint64_t out_bytes = 0;
  std::string race;  // emulation workers: non-empty when the thread orders' results differ
  std::string not_recomputed;  // emulation workers: a repeated call left the result unwritten
};

/// Copies the fields a run record (check.h) and a CheckReply share, either way: the worker puts
/// its run in the reply, the judge takes it back out (output, guards and the input after the call
/// travel in DIR/out-K.bin).
template <typename From, typename To>
void copy_run(const From& from, To& to) {
  to.not_implemented = from.not_implemented;
  to.error = from.error;
  to.context_broken = from.context_broken;
  to.leaked_bytes = from.leaked_bytes;
  to.leak_detail = from.leak_detail;
  to.race = from.race;
  to.not_recomputed = from.not_recomputed;
}

/// The reply to "prepare": whether the input now waits on the device.
struct PrepareReply : ReplyHeader {
  bool prepared = false;
};

/// The results schema's `timing` object (grading/results.schema.json): exactly these keys.
struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  std::int64_t reps = 0;  // >= 1
  double spread = 0, gbps = 0, copy_gbps = 0, fraction_of_copy = 0;
  double reference_ms = 0, cub_ms = 0, ratio_to_reference = 0, ratio_to_cub = 0;
  std::string method;
};

/// The reply to "time". Decoding: "error" and "timing" must be there; the timing object is read
/// only when error is empty; baselines are kept only when well-formed (they only feed a cache).
struct TimeReply : ReplyHeader {
  std::string wrong_output;            // a timed call's output was not the checked result ("" when all were)
  std::optional<Timing> timing;
  std::optional<Baselines> baselines;  // the ones the timing used
  bool measured = false;               // measured now (not taken from the command)
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
void to_json(nlohmann::json& j, const PrepareReply& m);
void to_json(nlohmann::json& j, const Timing& m);
void from_json(const nlohmann::json& j, Timing& m);
void to_json(nlohmann::json& j, const TimeReply& m);
/// Messages: "a field of the timing reply is missing", "the timing object does not have the
/// schema's fields".
void from_json(const nlohmann::json& j, TimeReply& m);

/// True when `reply` is an object whose k and nonce are the command's.
bool answers(const nlohmann::json& reply, const Command& command);
/// A reply's harness_error ("" when absent); throws MessageError when it is not a string.
std::string harness_error_of(const nlohmann::json& reply);

/// One message as one line (no newline); text that is not UTF-8 is replaced, never an error.
std::string encode(const nlohmann::json& message);

}  // namespace scangrade::grader
