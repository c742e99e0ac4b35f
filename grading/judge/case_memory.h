// The trusted side of a case's buffers (issue: verdicts from data the student's process cannot
// forge). The judge, or the checker it starts on the GPU backend, owns every buffer a slot call
// touches: it fills the input and poisons the output zone (guard, output, guard: check.h) itself,
// passes the worker descriptors (never paths), and after the worker's reply, or its death, reads
// the guards, the output and the input back itself.
//   host memory (CPU emulation backend): two memfds, mapped here and by the worker;
//   checker memory (GPU): scangrade_checker's device buffers (grading/checker), exported as CUDA
//   shareable handles; it also prepares and verifies every timed call (timing.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checker_messages.h"
#include "process.h"
#include "messages.h"
#include "scangrade/suite.h"

namespace scangrade::grader {

/// A case's input in a file for the checker: a descriptor (-1: none) and the input's byte offset.
struct CachedInput {
  int fd = -1;
  std::size_t offset = 0;
};

/// Descriptors of a case's buffers for the worker, and each buffer's size.
struct SharedBuffers {
  std::vector<int> fds;  // owned: closed with the object
  std::vector<std::uint64_t> sizes;
  bool kept = false;     // no descriptors: the buffers the worker holds from its last case, filled afresh
  SharedBuffers() = default;
  SharedBuffers(const SharedBuffers&) = delete;
  SharedBuffers& operator=(const SharedBuffers&) = delete;
  SharedBuffers(SharedBuffers&& o) noexcept : fds(std::move(o.fds)), sizes(std::move(o.sizes)), kept(o.kept) {
    o.fds.clear();
  }
  ~SharedBuffers() { close(); }
  void close();  // closes the descriptors (after they were passed on)
};

/// A file in memory (memfd) mapped read-write here, grown on demand.
class Staging {
 public:
  Staging() = default;
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  /// At least `bytes` mapped; "" or what failed.
  std::string reserve(std::size_t bytes);
  char* data() const { return data_; }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  char* data_ = nullptr;
  std::size_t size_ = 0;
};

/// The checker process (GPU backend): one per judge, started on first use.
class CheckerProcess {
 public:
  /// Starts `path` --socket FD; its stderr goes to `log_path`. Throws std::runtime_error.
  CheckerProcess(const std::string& path, const std::string& log_path);
  ~CheckerProcess();
  const std::string& device() const { return device_; }
  /// One request and its reply (checker_messages.h), with descriptors both ways; throws
  /// std::runtime_error when the checker fails, is gone or garbles its reply (a harness fault). A
  /// reply's error is returned as is.
  CheckerReply request(const CheckerRequest& message, const std::vector<int>& fds, std::vector<int>* got = nullptr,
                       double deadline_s = 300);

 private:
  pid_t pid_ = -1;
  int sock_ = -1;
  std::string device_;
};

/// Where a case's input comes from: memory, or a file of the batch's case cache.
struct InputSource {
  const void* data = nullptr;
  CachedInput file;
};

/// The trusted side of check cases.
class CaseMemory {
 public:
  virtual ~CaseMemory() = default;
  /// Buffers for the next case: the input (n elements of `element` bytes, from `input`: in memory,
  /// or a descriptor of a case cache file, which only the checker reads) and the poisoned zone. ""
  /// or a harness error. `worker_holds`: the worker kept the buffers of its last case mapped; when
  /// they fit this case, the trusted side may fill them again and send no descriptors (out.kept).
  virtual std::string setup(std::size_t n, std::size_t element, const InputSource& input, bool worker_holds,
                            SharedBuffers& out) = 0;
  /// After the call: true when the trusted side showed, without reading anything back, that guards,
  /// input and output are right (the checker's device check); then the case is released. False:
  /// collect() and judge on the host (always on the emulation backend). "" or a harness error in `error`.
  virtual bool verified(ScanKind /*kind*/, DType /*dtype*/, std::string& /*error*/) { return false; }
  /// After the call: the zone ((n + 2 guards) elements) into `zone`, the input into `input_after`.
  virtual std::string collect(void* zone, void* input_after) = 0;
  /// Forgets the case without reading it (after a timeout or a crash).
  virtual void release() = 0;
};

/// Emulation backend: memfds mapped by the judge.
std::unique_ptr<CaseMemory> host_memory();
/// GPU backend: the checker's device buffers.
std::unique_ptr<CaseMemory> checker_memory(CheckerProcess& checker);

}  // namespace scangrade::grader
