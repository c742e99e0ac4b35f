// The GPU lock of one GPU shared by several judges (gpu_lock.h).
#include "gpu_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "text.h"

namespace scangrade::grader {
namespace {

int open_lock_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) throw std::runtime_error("cannot open the GPU lock " + path + ": " + std::strerror(errno));
  return fd;
}

void lock_file(int fd, int operation, const std::string& path) {
  while (::flock(fd, operation) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd);
    throw std::runtime_error("cannot lock the GPU lock " + path + ": " + std::strerror(err));
  }
}

}  // namespace

GpuLock::GpuLock(const std::string& path, Mode mode) {
  const auto start = Clock::now();
  const std::string gate_path = path + ".gate";
  const int gate = open_lock_file(gate_path);
  lock_file(gate, LOCK_EX, gate_path);
  try {
    fd_ = open_lock_file(path);
    lock_file(fd_, mode == Shared ? LOCK_SH : LOCK_EX, path);
  } catch (...) {
    fd_ = -1;
    ::close(gate);
    throw;
  }
  ::close(gate);  // through the turnstile: the next one may queue
  waited_s_ = seconds_since(start);
}

GpuLock::~GpuLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace scangrade::grader
