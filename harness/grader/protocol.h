// The judge <-> worker protocol (harness/grader/README section in the report; summary here).
//
//   worker --channel DIR        DIR: a private 0700 folder made by the judge.
//   fd 3 (worker -> judge)      JSON lines, written only by the worker's own code:
//                                 hello:  {"hello": 1, "device", "driver", "cuda_runtime", "error"}
//                                 reply:  {"k", "nonce", "not_implemented", "error", "harness_error",
//                                          "context_broken", "leaked_bytes", "leak_detail", "out_bytes",
//                                          "race"}   (race: emulation workers run each check under
//                                          several thread orders; non-empty when results differ)
//                                 time:   {"k", "nonce", "error", "harness_error", "context_broken", "timing"}
//   stdin (judge -> worker)     one JSON command per line:
//                                 {"k", "nonce", "mode": "check"|"time", "slot", "dtype", "kind", "n"}
//   DIR/in-K.bin                the input: n little-endian int32 or float32 (written by the judge)
//   DIR/out-K.bin               output[n] ++ guard_before[64] ++ guard_after[64] ++ input_after[n]
//                               (written by the worker to a temporary name, then renamed; only when
//                               the slot ran without error and is implemented)
//   fd 1, fd 2                  the student's output: redirected by the judge to DIR/student.log and
//                               never parsed.
// Header-only: the judge, the worker and the fake worker of the tests all include it.
#pragma once

#include <cerrno>
#include <cstring>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace scangrade::grader {

/// The file descriptor the worker replies on.
inline constexpr int kReplyFd = 3;
/// Every element type of the contract is 4 bytes wide.
inline constexpr std::uint64_t kElementBytes = 4;
/// Elements in each guard zone (check.h: kGuardElements).
inline constexpr std::uint64_t kGuardCount = 64;
/// The exit status compute-sanitizer is asked to use when it finds errors.
inline constexpr int kSanitizerErrorExit = 86;

inline std::string input_path(const std::string& dir, std::uint64_t k) {
  return dir + "/in-" + std::to_string(k) + ".bin";
}
inline std::string output_path(const std::string& dir, std::uint64_t k) {
  return dir + "/out-" + std::to_string(k) + ".bin";
}
/// Size of DIR/out-K.bin for n elements.
inline std::uint64_t output_bytes(std::uint64_t n) { return (2 * n + 2 * kGuardCount) * kElementBytes; }

/// Writes `bytes` to `path` through a temporary name and a rename (readers never see half a file).
/// Returns "" or what went wrong.
inline std::string write_file_atomic(const std::string& path, const void* data, std::size_t bytes) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot create " + tmp + ": " + std::strerror(errno);
  const char* p = static_cast<const char*>(data);
  std::size_t left = bytes;
  while (left > 0) {
    const ssize_t w = ::write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return "cannot write " + tmp + ": " + why;
    }
    p += w;
    left -= static_cast<std::size_t>(w);
  }
  if (::close(fd) != 0) return "cannot close " + tmp + ": " + std::strerror(errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return "cannot rename " + tmp + ": " + std::strerror(errno);
  return "";
}

/// The whole file, or nullopt when it cannot be read.
inline std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;
  return data;
}

/// Writes one whole line to fd (retrying short writes). False when the reader is gone.
inline bool write_line(int fd, std::string line) {
  line += '\n';
  const char* p = line.data();
  std::size_t left = line.size();
  while (left > 0) {
    const ssize_t w = ::write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    left -= static_cast<std::size_t>(w);
  }
  return true;
}

}  // namespace scangrade::grader
