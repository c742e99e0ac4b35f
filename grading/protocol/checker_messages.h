// The judge <-> checker messages (README.md in this folder, "The checker"): one struct for the
// hello, the requests and the replies, and the only code that turns them into the JSON text of one
// SOCK_SEQPACKET message and back. The judge (CheckerProcess), the checker and the tests' fake
// checker all use these; descriptors travel beside the text (fd_passing.h).
//
// Decoding fails closed like messages.h: a missing field or one of the wrong type throws
// MessageError. A reply with a string "error" is that error, whatever else it holds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "messages.h"  // MessageError, Baselines
#include "scangrade/suite.h"

namespace scangrade::grader {

/// What the judge asks of the checker. Check cases: setup, then check (and collect when the device
/// did not show the output right) or release. Timed cases: time_setup, then prime, the worker's
/// call, verify (and reference_call after the warm-up) per call, then time_end.
enum class CheckerOp { Setup, Check, Collect, Release, TimeSetup, Prime, Verify, ReferenceCall, TimeEnd };

std::string name(CheckerOp op);

/// checker -> judge, once, first: the device, or why the checker cannot use it.
struct CheckerHello {
  std::string device;
  std::string error;  // non-empty: no GPU work can be done
};

/// judge -> checker. Each op reads only its own fields (the comments say which).
struct CheckerRequest {
  CheckerOp op = CheckerOp::Release;
  std::uint64_t n = 0;       // setup, time_setup: elements
  std::uint64_t element = 4; // setup: bytes per element (time_setup: its dtype's)
  std::uint64_t offset = 0;  // setup, time_setup: the input's byte offset in the descriptor sent along
  bool share = true;         // setup: descriptors even when the last case's buffers are kept
  Slot slot = Slot::HillisSteele;          // time_setup
  DType dtype = DType::Int32;              // check, time_setup
  ScanKind kind = ScanKind::Inclusive;     // check, time_setup
  ValueKind values = ValueKind::Random;    // time_setup
  bool baselines = false;         // time_setup: measure the baselines (reference, CUB, copy)
  bool paired_reference = false;  // time_setup: a reference call paired with each timed call
  int j = 0;                      // prime, verify: the buffer pair (0 or 1)

  static CheckerRequest of(CheckerOp op);
  static CheckerRequest setup(std::uint64_t n, std::uint64_t element, std::uint64_t offset, bool share);
  static CheckerRequest check(ScanKind kind, DType dtype);
  /// The timed case `c` (slot, dtype, kind, values, n), its input at `offset`.
  static CheckerRequest time_setup(const Case& c, std::uint64_t offset, bool baselines, bool paired_reference);
  static CheckerRequest prime(int j);
  static CheckerRequest verify(int j);
};

/// checker -> judge: the reply to one request. Each op sets only its own fields.
struct CheckerReply {
  std::string error;                  // non-empty: the op failed (no other field is set)
  std::vector<std::uint64_t> sizes;   // setup, time_setup: bytes of each buffer, in descriptor order
  bool kept = false;                  // setup: the last case's buffers, filled afresh, no descriptors
  bool verified = false;              // check: guards, input and output shown right on the device
  std::optional<Baselines> baselines; // time_setup, when asked
  std::uint64_t flush_bytes = 0;      // time_setup: the L2 flush before every call
  bool fresh_input = false;           // time_setup: every call gets new input values
  std::optional<std::uint64_t> outside;  // verify: the first element outside the band (none: right)
  double ms = 0;                      // reference_call: one call of the reference

  /// A failed op; an empty `why` still fails (error is never empty here).
  static CheckerReply failed(std::string why);
};

std::string encode(const CheckerHello& m);
CheckerHello decode_checker_hello(const std::string& text);
std::string encode(const CheckerRequest& m);
CheckerRequest decode_checker_request(const std::string& text);
/// A reply's text; `op` says which fields it carries.
std::string encode(const CheckerReply& m, CheckerOp op);
CheckerReply decode_checker_reply(const std::string& text, CheckerOp op);

}  // namespace scangrade::grader
