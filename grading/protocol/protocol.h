// The judge <-> worker protocol's files and pipes (README.md in this folder describes the whole
// protocol; messages.h holds the messages): the reply descriptor, the channel folder's file names
// and sizes, and writing and reading those files whole.
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

/// One piece of a file: `bytes` bytes at `data` (written or read in order, without a staging copy).
struct Part {
  void* data;
  std::size_t bytes;
};

/// The parts of DIR/out-K.bin, in order, over a run record's vectors (sized by the caller when
/// reading): output, guard_before, guard_after, input_after.
template <typename T>
std::vector<Part> output_parts(RunRecord<T>& run) {
  const auto part = [](std::vector<T>& v) { return Part{v.data(), v.size() * sizeof(T)}; };
  return {part(run.output), part(run.guard_before), part(run.guard_after), part(run.input_after)};
}

/// Writes every byte to fd (retrying short and interrupted writes). False when it cannot (errno says why).
inline bool write_all(int fd, const void* data, std::size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t w = ::write(fd, p, bytes);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    bytes -= static_cast<std::size_t>(w);
  }
  return true;
}

/// Writes one whole line to fd. False when the reader is gone.
inline bool write_line(int fd, std::string line) {
  line += '\n';
  return write_all(fd, line.data(), line.size());
}

/// Writes the parts, in order, to `path` through a temporary name and a rename (readers never see
/// half a file). The temporary file is new (O_EXCL, no link followed, named after this process and
/// a counter): nothing already at a name can redirect the write. Returns "" or what went wrong.
inline std::string write_parts_atomic(const std::string& path, const std::vector<Part>& parts, mode_t mode = 0600) {
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return "cannot create " + tmp + ": " + std::strerror(errno);
  if (mode != 0600) (void)!::fchmod(fd, mode);  // whatever the umask
  for (const Part& part : parts) {
    if (!write_all(fd, part.data, part.bytes)) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return "cannot write " + tmp + ": " + why;
    }
  }
  if (::close(fd) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return "cannot write " + path + " through " + tmp + ": " + why;
  }
  return "";
}

/// Writes `bytes` to `path` atomically (write_parts_atomic). Returns "" or what went wrong.
inline std::string write_file_atomic(const std::string& path, const void* data, std::size_t bytes, mode_t mode = 0600) {
  return write_parts_atomic(path, {Part{const_cast<void*>(data), bytes}}, mode);
}

/// The size of the file at `path`, or nullopt when it cannot be opened.
inline std::optional<std::uint64_t> file_bytes(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return static_cast<std::uint64_t>(st.st_size);
}

/// Fills the parts, in order, from `path`, which must hold exactly their total size. Returns "" or
/// what went wrong.
inline std::string read_parts(const std::string& path, const std::vector<Part>& parts) {
  std::uint64_t total = 0;
  for (const Part& part : parts) total += part.bytes;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "cannot open " + path + ": " + std::strerror(errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) != total) {
    ::close(fd);
    return path + " holds " + std::to_string(st.st_size) + " bytes, expected " + std::to_string(total);
  }
  for (const Part& part : parts) {
    char* p = static_cast<char*>(part.data);
    std::size_t left = part.bytes;
    while (left > 0) {
      const ssize_t r = ::read(fd, p, left);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        const std::string why = r == 0 ? std::string("it ended early") : std::strerror(errno);
        ::close(fd);
        return "cannot read " + path + ": " + why;
      }
      p += r;
      left -= static_cast<std::size_t>(r);
    }
  }
  ::close(fd);
  return "";
}

/// The whole file, or nullopt when it cannot be read.
inline std::optional<std::string> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string data;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size > 0) data.reserve(static_cast<std::size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {  // to the end, whatever the size said (a log may grow while it is read)
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (r == 0) break;
    data.append(buf, static_cast<std::size_t>(r));
  }
  ::close(fd);
  return data;
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
