// The judge's channel (channel.h).
#include "channel.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>

#include "protocol.h"

namespace scangrade::grader {
namespace {

std::runtime_error sys_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

/// Whether `uid` may execute `path` (checked as that uid, in a child: the permissions of every
/// folder on the way count).
bool executable_as(uid_t uid, const std::string& path) {
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    if (setgid(uid) != 0 || setuid(uid) != 0) _exit(2);
    _exit(access(path.c_str(), X_OK) == 0 ? 0 : 1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::string random_suffix() {
  static std::random_device device;
  static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s;
  for (int i = 0; i < 12; ++i) s += digits[device() % 36];
  return s;
}


}  // namespace

// --- LogFile ---------------------------------------------------------------------------------------

LogFile::LogFile(int dir_fd, const std::string& name) {
  fd_ = ::openat(dir_fd, name.c_str(), O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd_ < 0) throw sys_error("cannot make the log " + name);
}

LogFile::~LogFile() {
  if (fd_ >= 0) ::close(fd_);
}

LogFile::LogFile(LogFile&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

LogFile& LogFile::operator=(LogFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

std::uintmax_t LogFile::size() const {
  struct stat st {};
  return fd_ >= 0 && ::fstat(fd_, &st) == 0 ? static_cast<std::uintmax_t>(st.st_size) : 0;
}

std::string LogFile::read_from(std::uintmax_t from) const {
  return fd_ < 0 ? std::string() : read_fd_capped(fd_, from, 4096, 16384).text;
}

CappedText LogFile::read_capped(std::size_t head, std::size_t tail) const {
  return fd_ < 0 ? CappedText{} : read_fd_capped(fd_, 0, head, tail);
}

// --- Channel ---------------------------------------------------------------------------------------

Channel::Channel(const std::string& base, const sandbox::Sandbox* sandbox, const std::string& worker)
    : worker_(worker) {
  sweep_stale_channels(base);
  // named after this judge: a judge that was killed before it could remove its channel is found
  // (its pid is gone) and its channel removed by the next one
  std::string pattern = base + "/scangrade-" + std::to_string(getpid()) + "-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) throw sys_error("cannot make the channel folder " + pattern);
  dir_ = pattern;
  try {
    // others may pass through (to bin/worker, io/) but neither list nor write it
    if (::chmod(dir_.c_str(), 0711) != 0) throw sys_error("cannot set the mode of " + dir_);
    dir_fd_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir_fd_ < 0) throw sys_error("cannot open " + dir_);
    student_log_ = LogFile(dir_fd_, "student.log");
    sanitizer_log_ = LogFile(dir_fd_, "sanitizer.log");
    io_ = dir_ + "/io";
    if (::mkdirat(dir_fd_, "io", 0700) != 0) throw sys_error("cannot make " + io_);
    io_fd_ = ::openat(dir_fd_, "io", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (io_fd_ < 0) throw sys_error("cannot open " + io_);
    if (sandbox != nullptr) sandbox->hand_over(io_);
    // Without bubblewrap the sandbox uid runs the worker where it was built: a folder only the
    // grader's uid may enter (root's home, a private mktemp -d) stops it. Then it runs a copy.
    const auto uid = sandbox != nullptr ? sandbox->uid() : std::nullopt;
    if (uid && !sandbox->isolation().sandboxed && !executable_as(*uid, worker)) {
      if (::mkdirat(dir_fd_, "bin", 0711) != 0) throw sys_error("cannot make " + dir_ + "/bin");
      const std::string copy = dir_ + "/bin/worker";
      std::error_code ec;
      std::filesystem::copy_file(worker, copy, ec);
      if (ec || ::chmod(copy.c_str(), 0555) != 0)
        throw std::runtime_error("the sandbox uid " + std::to_string(*uid) + " cannot execute " + worker +
                                 " (a folder on its path is closed to other users) and it could not be copied to " +
                                 copy + ": " + (ec ? ec.message() : std::strerror(errno)));
      if (!executable_as(*uid, copy))
        throw std::runtime_error("the sandbox uid " + std::to_string(*uid) + " cannot execute " + worker +
                                 " nor its copy " + copy + " (is " + base + " mounted noexec?)");
      worker_ = copy;
      worker_note_ = "the worker runs from a copy in the channel: the sandbox uid " + std::to_string(*uid) +
                     " cannot reach " + worker;
    }
  } catch (...) {
    if (io_fd_ >= 0) ::close(io_fd_);
    if (dir_fd_ >= 0) ::close(dir_fd_);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    throw;
  }
}

Channel::~Channel() {
  if (io_fd_ >= 0) ::close(io_fd_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);  // removes links, never what they point at
}

std::string Channel::write_io(const std::string& name, const void* data, std::size_t bytes) const {
  const std::string tmp = "." + name + "." + random_suffix();
  const int fd = ::openat(io_fd_, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot make " + io_ + "/" + tmp + ": " + std::strerror(errno);
  const bool ok = write_all(fd, data, bytes);
  const int e = errno;
  if (::close(fd) != 0 || !ok) {
    ::unlinkat(io_fd_, tmp.c_str(), 0);
    return "cannot write " + io_ + "/" + tmp + ": " + std::strerror(ok ? errno : e);
  }
  // the sandbox uid owns io/ and may have put anything at `name`: rename replaces it, links included
  if (::renameat(io_fd_, tmp.c_str(), io_fd_, name.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlinkat(io_fd_, tmp.c_str(), 0);
    return "cannot rename " + tmp + " to " + name + " in " + io_ + ": " + why;
  }
  return "";
}

std::optional<std::string> Channel::read_io(const std::string& name, std::size_t cap, std::string& why) const {
  const int fd = ::openat(io_fd_, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    why = errno == ELOOP ? "it is a symbolic link" : errno == ENOENT ? "no such file" : std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  std::optional<std::string> text;
  if (::fstat(fd, &st) != 0) why = std::strerror(errno);
  else if (!S_ISREG(st.st_mode)) why = "it is not a plain file";
  else if (st.st_nlink != 1) why = "it is a hard link to another file";
  else if (static_cast<std::uint64_t>(st.st_size) > cap) why = "it holds more than " + std::to_string(cap) + " bytes";
  else {
    text.emplace();
    char buf[1 << 16];
    for (;;) {
      const ssize_t r = ::read(fd, buf, sizeof buf);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      if (text->size() + static_cast<std::size_t>(r) > cap) {
        why = "it grew past " + std::to_string(cap) + " bytes";
        text.reset();
        break;
      }
      text->append(buf, static_cast<std::size_t>(r));
    }
  }
  ::close(fd);
  return text;
}

void Channel::remove_io(const std::string& name) const { ::unlinkat(io_fd_, name.c_str(), 0); }

std::string channel_base() {
  if (const char* dir = std::getenv("SCANGRADE_CHANNEL_DIR"); dir && *dir) return dir;
  struct statvfs fs {};
  if (access("/dev/shm", W_OK | X_OK) == 0 && statvfs("/dev/shm", &fs) == 0 &&
      static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize) >= 8.0 * (1ull << 30))
    return "/dev/shm";
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

void sweep_stale_channels(const std::string& base) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(base, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("scangrade-", 0) != 0) continue;
    const std::string rest = name.substr(10);
    const std::size_t dash = rest.find('-');
    if (dash == std::string::npos || dash == 0 || rest.find_first_not_of("0123456789") != dash) continue;
    const pid_t owner = static_cast<pid_t>(std::stol(rest.substr(0, dash)));
    if (kill(owner, 0) != 0 && errno == ESRCH) std::filesystem::remove_all(entry.path(), ec);
  }
}

}  // namespace scangrade::grader
