// Passing file descriptors between the judge, the checker and a worker over UNIX sockets
// (SCM_RIGHTS): the case buffers the trusted side owns travel as descriptors (a memfd on the
// emulation backend, a CUDA shareable handle on the GPU), never as paths the worker could guess.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace scangrade::grader {

/// The most descriptors one message carries.
inline constexpr std::size_t kMaxPassedFds = 8;

/// Sends `data` (at least one byte) with `fds` attached, in one sendmsg. False when the peer is gone.
inline bool send_with_fds(int sock, const std::string& data, const std::vector<int>& fds) {
  if (fds.size() > kMaxPassedFds) return false;
  std::string payload = data.empty() ? std::string(1, '\0') : data;
  iovec iov{payload.data(), payload.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    const ssize_t w = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    return w == static_cast<ssize_t>(payload.size());
  }
}

/// Receives one message of at most `max_bytes` (a SOCK_SEQPACKET message, or the next bytes of a
/// stream) and the descriptors attached to it (made close-on-exec). False on end of file or error.
inline bool receive_with_fds(int sock, std::string& data, std::vector<int>& fds, std::size_t max_bytes = 1) {
  data.assign(max_bytes, '\0');
  iovec iov{data.data(), data.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t r;
  do r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  while (r < 0 && errno == EINTR);
  fds.clear();
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      const std::size_t at = fds.size();
      fds.resize(at + count);
      std::memcpy(fds.data() + at, CMSG_DATA(c), count * sizeof(int));
    }
  if (r <= 0 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
    for (int fd : fds) close(fd);
    fds.clear();
    return false;
  }
  data.resize(static_cast<std::size_t>(r));
  return true;
}

}  // namespace scangrade::grader
