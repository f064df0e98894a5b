// weft — name resolution without blocking a worker (docs/io.md §Resolving
// names): getaddrinfo(3) run by weft::spawn_blocking.
//
//   auto addrs = weft::io::resolve("localhost", "8080").get();  // in a task
//   int fd = ::socket(addrs[0].family, addrs[0].socktype | SOCK_CLOEXEC, addrs[0].protocol);
//   weft::io::connect(fd, addrs[0].sockaddr_ptr(), addrs[0].length).get();
#pragma once

#include <netdb.h>
#include <sys/socket.h>

#include <string>
#include <system_error>
#include <vector>

#include "weft/future.hpp"

namespace weft::io {

// One result of getaddrinfo, self-contained (no addrinfo list to free):
// pass sockaddr_ptr()/length to connect or bind, family/socktype/protocol to
// socket(2).
struct address {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = 0;
  int socktype = 0;
  int protocol = 0;
  const sockaddr* sockaddr_ptr() const noexcept {
    return reinterpret_cast<const sockaddr*>(&storage);
  }
};

// The category of getaddrinfo's errors: value() is the EAI_* code (negative
// on glibc), message() is gai_strerror's text, name() "weft.resolver".
// EAI_SYSTEM is never reported with it: the errno it stands for is, in
// std::system_category().
const std::error_category& resolver_category() noexcept;

// Resolves host and service (either may be empty, not both: as getaddrinfo's
// null arguments) on a helper thread of the calling task's runtime. Only the
// ai_flags, ai_family, ai_socktype and ai_protocol of `hints` are used (they
// are copied at once); nullptr means AF_UNSPEC, SOCK_STREAM and no flags
// (each address appears once rather than once per socket type; no
// AI_ADDRCONFIG, which would refuse "localhost" on a host whose only
// interface is the loopback). The future holds the addresses in getaddrinfo's order (never empty),
// or std::system_error: a code of resolver_category() (EAI_NONAME: unknown
// name, EAI_SERVICE, EAI_AGAIN: try again, ...) or, for EAI_SYSTEM, the
// errno in std::system_category(). Inside a task only (std::logic_error
// elsewhere, as spawn_blocking). A lookup cannot be cancelled once started;
// its runtime's destructor waits for it.
future<std::vector<address>> resolve(std::string host, std::string service,
                                     const addrinfo* hints = nullptr);

}  // namespace weft::io
