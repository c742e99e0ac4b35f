// Checks shared by `make test` and the grader: from what a run left behind to a verdict.
//
// A run's record (RunRecord) holds what was read back from the device after the student call: the
// output, the guard zones around it, the input buffer and the memory balance. judge() turns it into
// one Status and a message that names the case, the first wrong element (with its block, thread
// and warp under the slot's reference layout) and, when the pattern is recognizable, a hint.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "scangrade/status.h"
#include "scangrade/suite.h"

namespace scangrade {

/// Elements of guard zone on each side of d_out (256 bytes: d_out stays 256-byte aligned).
inline constexpr std::size_t kGuardElements = 64;

/// Bit patterns: the guard zones are filled with the canary, the output with the poison.
inline constexpr std::uint32_t kCanaryBits = 0x5CA1AB1Eu;
inline constexpr std::uint32_t kPoisonBits = 0xDEADBEEFu;  // as float -6.26e18; both patterns are
                                                           // compared bitwise, never by value
template <typename T>
T from_bits(std::uint32_t bits);
template <typename T>
std::uint32_t to_bits(T value);

/// Everything a run leaves behind that the verdict depends on.
template <typename T>
struct RunRecord {
  bool not_implemented = false;
  std::string not_implemented_at;  // "student/x.cu:N", the not_implemented() call's line ("" unknown)
  std::string error;               // exception text or CUDA error; non-empty means Crash
  bool context_broken = false;     // a sticky CUDA error: the process cannot run more cases
  std::string race;                // non-empty: results differ between thread orders (emulation)
  std::string not_recomputed;      // non-empty: a repeated call did not compute the same result (emulation)
  std::string stray_write;         // non-empty: a write into the slack around an allocation the slot made
                                   // (emulation, on the cases memcheck checks on a GPU): MemoryError
  std::string undefined;           // operations C++ leaves undefined that the call ran (emulation): a note
                                   // added to any verdict but pass, never a verdict of its own
  std::vector<T> output;           // d_out[0..n)
  std::vector<T> guard_before;     // kGuardElements right before d_out
  std::vector<T> guard_after;      // kGuardElements right after d_out[n-1]
  std::vector<T> input_after;      // d_in after the call
  std::int64_t leaked_bytes = 0;   // device memory the call allocated and did not free
  std::string leak_detail;         // how the leak was measured
};

struct Verdict {
  Status status = Status::InternalError;
  std::string message;  // empty for Pass
};

/// Emulation (the CPU backend runs each case in several thread orders, emulated_run.h): a case's
/// verdict as a GPU would give it. `forward` is the forward order's verdict judged without the race;
/// `race` what the orders disagreed on ("" when they agreed or were not compared). When the forward
/// order's data is wrong and the orders disagreed (or were not compared: n above
/// kOrdersComparedMaxN), `reverse` runs the call in the reverse order, each warp's lanes in lockstep
/// at volatile shared-memory accesses as a GPU's warp runs them: data it gets right is the
/// verdict (the hardware may run the threads that way), and a race is then reported as compute-sanitizer
/// racecheck reports it: only on a case the suite has racecheck check, and only when the case's
/// functional run passed (the GPU sanitizes only such cases); anywhere else it is no verdict. When no
/// order gets the data right and they disagree, a case racecheck checks is a race; any other keeps its
/// forward verdict.
inline constexpr std::size_t kOrdersComparedMaxN = std::size_t{1} << 16;
Verdict order_verdict(const Case& c, Verdict forward, const std::string& race,
                      const std::function<std::optional<Verdict>()>& reverse);

/// What most likely keeps a slot of this kind from returning (a timeout's message): a loop that never
/// ends in a one-block slot or a hierarchy, a block waiting for another in the single-pass slot.
std::string timeout_causes(Slot slot);

/// The element-by-element comparison of an output with the oracle (within the tolerance rule).
struct Comparison {
  std::size_t wrong = 0;       // elements outside the tolerance (unwritten ones included)
  std::size_t unwritten = 0;   // elements that still hold the poison pattern
  std::vector<std::size_t> first_wrong;  // up to 8 indices, ascending
};

template <typename T>
Comparison compare_output(const std::vector<T>& input, ScanKind kind, const std::vector<double>& expected,
                          const std::vector<T>& got);

/// Every correct output element as a closed interval [lo[i], hi[i]] of T: the comparison rule of
/// compare_output (int32 exactly; float32 within the tolerance of oracle.h), for a check that runs
/// where the rule cannot (the worker's device-side check of every timed repetition).
template <typename T>
struct Band {
  std::vector<T> lo, hi;
};
template <typename T>
Band<T> acceptance_band(const std::vector<T>& input, ScanKind kind, const std::vector<double>& expected);

/// "element 1500: block 0, thread 750 (warp 23, lane 14) with 2 elements per thread".
std::string element_coordinates(Slot slot, std::size_t index);

/// The whole verdict. Order of precedence: not_implemented, crash, race, out_of_bounds_write,
/// input_modified, fail, leak, pass.
template <typename T>
Verdict judge(const Case& c, const std::vector<T>& input, const std::vector<double>& expected,
              const RunRecord<T>& run);

/// judge() for a run whose guards, input and output a trusted check already found right (the GPU
/// checker's device-side check, grading/checker/output_check.h): the verdict judge() gives such a
/// run, from the rest of its record (not_implemented, crash, race, leak or pass). `run.output`,
/// the guards and `run.input_after` are not read.
template <typename T>
Verdict judge_checked(const Case& c, const RunRecord<T>& run);

}  // namespace scangrade
