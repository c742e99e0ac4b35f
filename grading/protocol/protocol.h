// The judge <-> worker protocol's files and pipes (README.md in this folder describes the whole
// protocol; messages.h holds the messages): the reply descriptor, the channel folder's file names
// and sizes (files.h writes and reads them).
// Header-only: the judge, the worker and the fake worker of the tests all include it.
#pragma once

#include <cerrno>
#include <cstring>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "scangrade/check.h"

namespace scangrade::grader {

/// The file descriptor the worker replies on.
inline constexpr int kReplyFd = 3;
/// Every element type of the contract is 4 bytes wide.
inline constexpr std::uint64_t kElementBytes = 4;
/// Elements in each guard zone of an output file.
inline constexpr std::uint64_t kGuardCount = kGuardElements;
/// The exit status compute-sanitizer is asked to use when it finds errors.
inline constexpr int kSanitizerErrorExit = 86;
/// The largest compute-sanitizer report the judge reads (it asks for at most 50 records).
inline constexpr std::size_t kSanitizerReportCap = 16u << 20;
/// How a verdict that the submission's process caused by meddling with the grader begins.
inline constexpr const char* kInterfered = "the submission interfered with the grader: ";

/// The input of command k of a compute-sanitizer run, in the channel's io/ folder (the judge writes
/// it there, the worker reads it from its --channel folder).
inline std::string input_name(std::uint64_t k) { return "in-" + std::to_string(k) + ".bin"; }
inline std::string input_path(const std::string& dir, std::uint64_t k) { return dir + "/" + input_name(k); }
/// Size of DIR/out-K.bin for n elements.
inline std::uint64_t output_bytes(std::uint64_t n) { return (2 * n + 2 * kGuardCount) * kElementBytes; }

/// The parts of DIR/out-K.bin, in order, over a run record's vectors (sized by the caller when
/// reading): output, guard_before, guard_after, input_after.
template <typename T>
std::vector<Part> output_parts(RunRecord<T>& run) {
  const auto part = [](std::vector<T>& v) { return Part{v.data(), v.size() * sizeof(T)}; };
  return {part(run.output), part(run.guard_before), part(run.guard_after), part(run.input_after)};
}

/// Writes one whole line to fd. False when the reader is gone.
inline bool write_line(int fd, std::string line) {
  line += '\n';
  return write_all(fd, line.data(), line.size());
}

/// For the judge and the worker, which handle buffers of hundreds of MB case after case: serve
/// them from the heap and keep freed memory there (no mmap per block, no trimming), so that the next
/// case reuses the pages instead of having the kernel map and zero new ones (under a batch's load
/// that page-fault work was half of all CPU time).
inline void reuse_large_buffers() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
}
}  // namespace scangrade::grader
