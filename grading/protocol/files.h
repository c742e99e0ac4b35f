// File helpers of the grader's own processes (judge, worker, checker, sandbox launcher): whole and
// exact reads and writes that retry short and interrupted calls, atomic writes through a new
// temporary file and a rename, and capped reads of files the student's process may have flooded.
// Header-only, so that every process links it without a library of its own.
#pragma once

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace scangrade::grader {

/// One piece of a file: `bytes` bytes at `data` (written or read in order, without a staging copy).
struct Part {
  void* data;
  std::size_t bytes;
};

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

/// Reads exactly `bytes` from fd (retrying short and interrupted reads). False at an early end or
/// an error.
inline bool read_all(int fd, void* to, std::size_t bytes) {
  auto* p = static_cast<char*>(to);
  while (bytes > 0) {
    const ssize_t got = ::read(fd, p, bytes);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    bytes -= static_cast<std::size_t>(got);
  }
  return true;
}

/// Writes the parts, in order, to `path` through a temporary name and a rename (readers never see
/// half a file). The temporary file is new (O_EXCL, no link followed, named after this process and
/// a counter): nothing already at a name can redirect the write. Returns "" or what went wrong.
inline std::string write_parts_atomic(const std::string& path, const std::vector<Part>& parts, mode_t mode = 0600) {
  static std::atomic<unsigned> counter{0};
  // pid and counter: unique in this machine's pid namespace; random bits: across machines and
  // namespaces writing one shared folder (the batch's case cache)
  unsigned random = 0;
  if (::getrandom(&random, sizeof random, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof random)) random = 0;
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
                          std::to_string(random);
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

/// Reads at most `head` + `tail` bytes of a stream that may be huge: the first `head`, the last
/// `tail`, and how many were left out (student output is capped where it is read).
struct CappedText {
  std::string text;
  std::uint64_t total = 0;
  std::uint64_t dropped = 0;
};
/// The same, fed piece by piece (a reader that polls with a deadline).
class CappedReader {
 public:
  CappedReader(std::size_t head, std::size_t tail) : head_(head), tail_max_(tail) {}
  void add(const char* data, std::size_t bytes);
  CappedText done();

 private:
  std::size_t head_, tail_max_;
  CappedText out_;
  std::string tail_;
};
inline CappedText read_capped(int fd, std::size_t head, std::size_t tail);
/// The same over a file from byte `from` on (a log the student's process wrote), by descriptor
/// (positioned reads: the descriptor's offset does not move) or by path.
inline CappedText read_fd_capped(int fd, std::uint64_t from, std::size_t head, std::size_t tail);
inline CappedText read_file_capped(const std::string& path, std::uint64_t from, std::size_t head, std::size_t tail);

inline void CappedReader::add(const char* p, std::size_t n) {
  out_.total += n;
  const std::size_t to_head = std::min(n, head_ - std::min(head_, out_.text.size()));
  out_.text.append(p, to_head);
  if (tail_max_ == 0) return;
  tail_.append(p + to_head, n - to_head);
  if (tail_.size() > 2 * tail_max_) tail_.erase(0, tail_.size() - tail_max_);
}

inline CappedText CappedReader::done() {
  if (tail_.size() > tail_max_) tail_.erase(0, tail_.size() - tail_max_);
  out_.dropped = out_.total - out_.text.size() - tail_.size();
  if (out_.dropped > 0) out_.text += "\n[... " + std::to_string(out_.dropped) + " bytes left out ...]\n";
  out_.text += tail_;
  tail_.clear();
  return std::move(out_);
}

inline CappedText read_capped(int fd, std::size_t head, std::size_t tail_max) {
  CappedReader reader(head, tail_max);
  char buf[1 << 16];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    reader.add(buf, static_cast<std::size_t>(r));
  }
  return reader.done();
}

inline CappedText read_fd_capped(int fd, std::uint64_t from, std::size_t head, std::size_t tail_max) {
  struct stat st {};
  if (fstat(fd, &st) == 0 && static_cast<std::uint64_t>(st.st_size) > from + head + tail_max) {
    // a flood: read the head, skip to the tail (the file may still grow; what was written counts)
    std::string h(head, '\0'), t(tail_max, '\0');
    const ssize_t hr = pread(fd, h.data(), head, static_cast<off_t>(from));
    const std::uint64_t tail_at = static_cast<std::uint64_t>(st.st_size) - tail_max;
    const ssize_t tr = pread(fd, t.data(), tail_max, static_cast<off_t>(tail_at));
    h.resize(hr > 0 ? static_cast<std::size_t>(hr) : 0);
    t.resize(tr > 0 ? static_cast<std::size_t>(tr) : 0);
    CappedReader reader(head, tail_max);
    reader.add(h.data(), h.size());
    CappedText text = reader.done();
    text.total = static_cast<std::uint64_t>(st.st_size) - from;
    text.dropped = text.total - h.size() - t.size();
    text.text += "\n[... " + std::to_string(text.dropped) + " bytes left out ...]\n" + t;
    return text;
  }
  // positioned reads: the descriptor's own offset is left alone (an O_APPEND log goes on growing),
  // up to the size it had: a writer still running cannot keep this loop going
  CappedReader reader(head, tail_max);
  char buf[1 << 16];
  const std::uint64_t end = static_cast<std::uint64_t>(st.st_size);
  for (std::uint64_t at = from; at < end;) {
    const ssize_t r = pread(fd, buf, std::min<std::uint64_t>(sizeof buf, end - at), static_cast<off_t>(at));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    reader.add(buf, static_cast<std::size_t>(r));
    at += static_cast<std::uint64_t>(r);
  }
  return reader.done();
}

inline CappedText read_file_capped(const std::string& path, std::uint64_t from, std::size_t head, std::size_t tail_max) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  CappedText out = read_fd_capped(fd, from, head, tail_max);
  ::close(fd);
  return out;
}

}  // namespace scangrade::grader
