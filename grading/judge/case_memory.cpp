// The trusted side of a case's buffers (case_memory.h).
#include "case_memory.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "fd_passing.h"
#include "scangrade/check.h"

namespace scangrade::grader {

using nlohmann::json;

namespace {

std::runtime_error sys_failure(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

/// A memfd of `bytes` (at least one), mapped read-write.
struct MemFile {
  int fd = -1;
  char* data = nullptr;
  std::size_t size = 0;
  std::string open(const char* name, std::size_t bytes) {
    size = bytes ? bytes : 1;
    fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) return std::string("memfd_create: ") + std::strerror(errno);
    if (ftruncate(fd, static_cast<off_t>(size)) != 0) return std::string("ftruncate: ") + std::strerror(errno);
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return std::string("mmap: ") + std::strerror(errno);
    data = static_cast<char*>(p);
    return "";
  }
  ~MemFile() {
    if (data) munmap(data, size);
    if (fd >= 0) close(fd);
  }
};

class HostMemory : public CaseMemory {
 public:
  std::string setup(std::size_t n, std::size_t element, const InputSource& input, bool, SharedBuffers& out) override {
    release();
    if (n && !input.data) return "the emulation backend's cases need their input in memory";
    in_ = std::make_unique<MemFile>();
    zone_ = std::make_unique<MemFile>();
    n_ = n;
    element_ = element;
    const std::size_t g = kGuardElements;
    if (std::string why = in_->open("scangrade-input", n * element); !why.empty()) return why;
    if (std::string why = zone_->open("scangrade-output", (n + 2 * g) * element); !why.empty()) return why;
    if (n) std::memcpy(in_->data, input.data, n * element);
    auto* zone = reinterpret_cast<std::uint32_t*>(zone_->data);
    for (std::size_t i = 0; i < n + 2 * g; ++i) zone[i] = (i < g || i >= g + n) ? kCanaryBits : kPoisonBits;
    for (const MemFile* f : {in_.get(), zone_.get()}) {
      const int copy = fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
      if (copy < 0) return std::string("dup: ") + std::strerror(errno);
      out.fds.push_back(copy);
      out.sizes.push_back(f->size);
    }
    return "";
  }
  std::string collect(void* zone, void* input_after) override {
    if (!in_) return "collect without a case";
    std::memcpy(zone, zone_->data, (n_ + 2 * kGuardElements) * element_);
    if (n_) std::memcpy(input_after, in_->data, n_ * element_);
    release();
    return "";
  }
  void release() override {
    in_.reset();
    zone_.reset();
  }

 private:
  std::unique_ptr<MemFile> in_, zone_;
  std::size_t n_ = 0, element_ = 4;
};

class CheckerMemory : public CaseMemory {
 public:
  explicit CheckerMemory(CheckerProcess& checker) : checker_(checker) {}
  std::string setup(std::size_t n, std::size_t element, const InputSource& input, bool worker_holds,
                    SharedBuffers& out) override {
    n_ = n;
    element_ = element;
    CachedInput from = input.file;
    if (from.fd < 0) {  // the input in memory: through the staging memfd
      if (std::string why = staging_.reserve(std::max(n * element, std::size_t{1})); !why.empty()) return why;
      if (n) std::memcpy(staging_.data(), input.data, n * element);
      from = {staging_.fd(), 0};
    }
    std::vector<int> fds;
    const CheckerReply reply = checker_.request(CheckerRequest::setup(n, element, from.offset, !worker_holds), {from.fd}, &fds);
    out.fds = fds;
    if (!reply.error.empty()) return "the checker could not set the case up: " + reply.error;
    out.kept = worker_holds && reply.kept;
    if (fds.size() != (out.kept ? 0u : 2u))
      return "the checker sent " + std::to_string(fds.size()) + " descriptors, not " + (out.kept ? "0" : "2");
    out.sizes = reply.sizes;
    return "";
  }
  bool verified(ScanKind kind, DType dtype, std::string& error) override {
    CheckerReply reply;
    try {
      reply = checker_.request(CheckerRequest::check(kind, dtype), {});
    } catch (const std::exception& ex) {  // the checker is gone: a harness fault, not the submission's
      error = std::string("the checker could not check the case: ") + ex.what();
      return false;
    }
    if (!reply.error.empty()) {
      error = "the checker could not check the case: " + reply.error;
      return false;
    }
    if (!reply.verified) return false;
    release();
    return true;
  }
  std::string collect(void* zone, void* input_after) override {
    const std::size_t read_bytes = (n_ + 2 * kGuardElements) * element_ + n_ * element_;
    if (std::string why = staging_.reserve(std::max(read_bytes, std::size_t{1})); !why.empty()) return why;
    const CheckerReply reply = checker_.request(CheckerRequest::of(CheckerOp::Collect), {staging_.fd()});
    if (!reply.error.empty()) return "the checker could not read the case back: " + reply.error;
    const std::size_t zone_bytes = (n_ + 2 * kGuardElements) * element_;
    std::memcpy(zone, staging_.data(), zone_bytes);
    if (n_) std::memcpy(input_after, staging_.data() + zone_bytes, n_ * element_);
    return "";
  }
  void release() override {
    try {
      checker_.request(CheckerRequest::of(CheckerOp::Release), {});
    } catch (const std::exception&) {
    }
  }

 private:
  CheckerProcess& checker_;
  Staging staging_;
  std::size_t n_ = 0, element_ = 4;
};

}  // namespace

void SharedBuffers::close() {
  for (int fd : fds) ::close(fd);
  fds.clear();
}

Staging::~Staging() {
  if (data_) munmap(data_, size_);
  if (fd_ >= 0) close(fd_);
}

std::string Staging::reserve(std::size_t bytes) {
  if (bytes <= size_ && data_) return "";
  if (fd_ < 0) {
    fd_ = memfd_create("scangrade-staging", MFD_CLOEXEC);
    if (fd_ < 0) return std::string("memfd_create: ") + std::strerror(errno);
  }
  if (data_) munmap(data_, size_);
  data_ = nullptr;
  if (ftruncate(fd_, static_cast<off_t>(bytes)) != 0) return std::string("ftruncate: ") + std::strerror(errno);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) return std::string("mmap: ") + std::strerror(errno);
  data_ = static_cast<char*>(p);
  size_ = bytes;
  return "";
}

CheckerProcess::CheckerProcess(const std::string& path, const std::string& log_path) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) throw sys_failure("socketpair");
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  const pid_t pid = fork();
  if (pid < 0) throw sys_failure("fork");
  if (pid == 0) {
    const int child = fcntl(sv[1], F_DUPFD, 10);  // without close-on-exec
    if (log_fd >= 0) {
      dup2(log_fd, 1);
      dup2(log_fd, 2);
    }
    const std::string fd_text = std::to_string(child);
    execl(path.c_str(), path.c_str(), "--socket", fd_text.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  pid_ = pid;
  close(sv[1]);
  if (log_fd >= 0) close(log_fd);
  sock_ = sv[0];
  std::string text;
  std::vector<int> fds;
  pollfd p{sock_, POLLIN, 0};
  if (poll(&p, 1, 120000) <= 0 || !receive_with_fds(sock_, text, fds, 64 * 1024))
    throw std::runtime_error("the checker " + path + " did not start (see " + log_path + ")");
  for (int fd : fds) close(fd);
  CheckerHello hello;
  try {
    hello = decode_checker_hello(text);
  } catch (const MessageError& ex) {
    throw std::runtime_error(std::string("the checker's hello was garbled (") + ex.what() + ")");
  }
  if (!hello.error.empty()) throw std::runtime_error("the checker cannot use the GPU: " + hello.error);
  device_ = hello.device;
}

CheckerProcess::~CheckerProcess() {
  if (sock_ >= 0) close(sock_);  // the checker exits at end of file
  if (pid_ > 0) {
    for (int i = 0; i < 200; ++i) {  // up to 2 s to free its context
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      usleep(10000);
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

CheckerReply CheckerProcess::request(const CheckerRequest& message, const std::vector<int>& fds, std::vector<int>* got,
                                     double deadline_s) {
  if (sock_ < 0) throw std::runtime_error("the checker is gone");
  if (!send_with_fds(sock_, encode(message), fds)) throw std::runtime_error("the checker is gone");
  pollfd p{sock_, POLLIN, 0};
  const int ready = poll(&p, 1, static_cast<int>(deadline_s * 1000));
  std::string text;
  std::vector<int> received;
  if (ready <= 0 || !receive_with_fds(sock_, text, received, 64 * 1024)) {
    close(sock_);
    sock_ = -1;
    throw std::runtime_error(ready == 0 ? "the checker did not answer" : "the checker is gone");
  }
  if (got) *got = received;
  else
    for (int fd : received) close(fd);
  try {
    return decode_checker_reply(text, message.op);
  } catch (const MessageError& ex) {
    throw std::runtime_error(std::string("the checker's reply was garbled (") + ex.what() + ")");
  }
}

std::unique_ptr<CaseMemory> host_memory() { return std::make_unique<HostMemory>(); }
std::unique_ptr<CaseMemory> checker_memory(CheckerProcess& checker) { return std::make_unique<CheckerMemory>(checker); }

}  // namespace scangrade::grader
