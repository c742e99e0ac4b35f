// The judge's channel: where a worker's logs, the compute-sanitizer's reports and its inputs live.
//
//   <base>/scangrade-<judge pid>-XXXXXX/    the judge's own folder (0711, the judge's uid): never
//                                           bound into a sandbox, never writable by student code
//     student.log, sanitizer.log            created here by the judge (O_EXCL, no link followed) and
//                                           kept open: a worker gets the descriptor as its stdout and
//                                           stderr, the judge reads it back through the same one
//     checker.log                           the trusted checker's log
//     bin/worker                            a copy of the worker, only when the sandbox uid (no
//                                           bubblewrap) could not reach the built one
//     io/                                   the one folder student code may write (handed over to the
//                                           sandbox uid, bound writable into compute-sanitizer runs
//                                           only): inputs of sanitized cases, the sanitizer's XML
//
// Nothing in io/ is opened by name: the judge reaches it through a descriptor of the folder, writes
// with O_EXCL under fresh names, and reads only a plain file (no link followed, one hard link) with a
// size cap.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "files.h"
#include "sandbox.h"

namespace scangrade::grader {

/// A log file the judge created and keeps open (a worker's stdout and stderr).
class LogFile {
 public:
  LogFile() = default;
  /// Creates `name` in the folder `dir_fd` (which must not hold it yet); throws std::runtime_error.
  LogFile(int dir_fd, const std::string& name);
  ~LogFile();
  LogFile(LogFile&& other) noexcept;
  LogFile& operator=(LogFile&& other) noexcept;
  LogFile(const LogFile&) = delete;
  LogFile& operator=(const LogFile&) = delete;

  /// The descriptor (append-only writes: give it to a worker as stdout and stderr), -1 when none.
  int fd() const { return fd_; }
  std::uintmax_t size() const;
  /// What was written from byte `from` on, capped (the student may have written a flood).
  std::string read_from(std::uintmax_t from) const;
  /// Its first `head` and last `tail` bytes, and how much was left out between them.
  CappedText read_capped(std::size_t head, std::size_t tail) const;

 private:
  int fd_ = -1;
};

class Channel {
 public:
  /// Makes the folders under `base`; throws std::runtime_error with the reason. `sandbox` (may be
  /// null) gets io/; `worker` is copied to bin/ when the sandbox uid could not execute it.
  Channel(const std::string& base, const sandbox::Sandbox* sandbox, const std::string& worker);
  ~Channel();  // removes the whole folder
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  const std::string& dir() const { return dir_; }
  /// The folder student code may write (compute-sanitizer's reports, sanitized cases' inputs).
  const std::string& io() const { return io_; }
  /// The worker to start: the built one, or its copy in bin/.
  const std::string& worker() const { return worker_; }
  /// Why the worker was copied ("" when it was not).
  const std::string& worker_note() const { return worker_note_; }

  LogFile& student_log() { return student_log_; }
  LogFile& sanitizer_log() { return sanitizer_log_; }

  /// Writes `name` in io/ (a fresh file under a name nobody else can have made, renamed into place).
  /// Returns "" or what went wrong.
  std::string write_io(const std::string& name, const void* data, std::size_t bytes) const;
  /// The plain file `name` in io/, at most `cap` bytes; nullopt when it is missing, not a plain file,
  /// a link, linked elsewhere too, or larger than `cap` (`why` says which).
  std::optional<std::string> read_io(const std::string& name, std::size_t cap, std::string& why) const;
  void remove_io(const std::string& name) const;

 private:
  std::string dir_, io_, worker_, worker_note_;
  int dir_fd_ = -1, io_fd_ = -1;
  LogFile student_log_, sanitizer_log_;
};

/// The folder under which channels are made: $SCANGRADE_CHANNEL_DIR; else /dev/shm when it is a
/// writable memory file system with 8 GiB free (a sanitized case's input never touches a disk);
/// else $TMPDIR, else /tmp.
std::string channel_base();
/// Removes the channels of judges that are gone (killed before they could remove their own).
void sweep_stale_channels(const std::string& base);

}  // namespace scangrade::grader
