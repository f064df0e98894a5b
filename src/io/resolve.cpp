// weft::io::resolve: getaddrinfo on the blocking pool.
#include "weft/resolve.hpp"

#include <netdb.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "weft/blocking.hpp"

namespace weft::io {

namespace {

class resolver_category_impl final : public std::error_category {
 public:
  const char* name() const noexcept override { return "weft.resolver"; }
  std::string message(int code) const override { return ::gai_strerror(code); }
};

struct addrinfo_deleter {
  void operator()(addrinfo* p) const noexcept { ::freeaddrinfo(p); }
};

}  // namespace

const std::error_category& resolver_category() noexcept {
  static const resolver_category_impl category;
  return category;
}

future<std::vector<address>> resolve(std::string host, std::string service,
                                     const addrinfo* hints) {
  // Copy the fields that matter now: the caller's hints need not outlive the
  // call, and the other fields must be zero for getaddrinfo.
  addrinfo h{};
  if (hints) {
    h.ai_flags = hints->ai_flags;
    h.ai_family = hints->ai_family;
    h.ai_socktype = hints->ai_socktype;
    h.ai_protocol = hints->ai_protocol;
  } else {
    h.ai_family = AF_UNSPEC;
    h.ai_socktype = SOCK_STREAM;
  }
  return spawn_blocking([host = std::move(host), service = std::move(service), h] {
    addrinfo* raw = nullptr;
    const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(),
                                 service.empty() ? nullptr : service.c_str(), &h, &raw);
    if (rc == EAI_SYSTEM) {
      // errno 0 would make a success code: report EIO rather than nothing.
      const int e = errno;
      throw std::system_error(e ? e : EIO, std::system_category(),
                              "weft::io::resolve(" + host + ", " + service + ")");
    }
    if (rc != 0) {
      throw std::system_error(rc, resolver_category(),
                              "weft::io::resolve(" + host + ", " + service + ")");
    }
    std::unique_ptr<addrinfo, addrinfo_deleter> list(raw);
    std::vector<address> out;
    for (const addrinfo* p = raw; p; p = p->ai_next) {
      if (!p->ai_addr || p->ai_addrlen > sizeof(sockaddr_storage)) continue;
      address a;
      std::memcpy(&a.storage, p->ai_addr, p->ai_addrlen);
      a.length = p->ai_addrlen;
      a.family = p->ai_family;
      a.socktype = p->ai_socktype;
      a.protocol = p->ai_protocol;
      out.push_back(a);
    }
    if (out.empty()) {
      throw std::system_error(EAI_NONAME, resolver_category(),
                              "weft::io::resolve(" + host + ", " + service + ")");
    }
    return out;
  });
}

}  // namespace weft::io
