// Small helpers of the judge: text, clocks, a log's tail (files.h holds the file helpers).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstddef>
#include <string>

#include "process.h"  // Clock

namespace scangrade::grader {

/// `s` without leading and trailing white space.
std::string trim(std::string s);
/// The last `lines` lines of text (at most 2000 characters).
std::string tail_lines(const std::string& text, std::size_t lines);
/// "1.25" below 10 s, "42" above.
std::string format_seconds(double s);
/// "2026-01-31T12:00:00Z".
std::string utc_now();
/// `bytes` random bytes from /dev/urandom, in hex (a nonce).
std::string random_hex(std::size_t bytes);

double seconds_since(Clock::time_point t);
/// Now plus `seconds`.
Clock::time_point after(double seconds);

/// What `path` holds from byte `from` on, capped: the first 4 KiB and last 16 KiB and a count of the rest.
std::string read_from(const std::string& path, std::uintmax_t from);

}  // namespace scangrade::grader
