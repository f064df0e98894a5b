// http_server — a small HTTP/1.1 static-file server on weft::io.
//
//   http_server ROOT PORT [--requests N] [--workers P]
//
// Serves the regular files under ROOT on 127.0.0.1:PORT (0: any free port).
// Once listening it prints the port on a line of its own on stdout (and
// flushes), so a script can start it with PORT 0 and read where it is.
// --requests N: exit (status 0) after N responses, of any status; without it
// the server runs until killed.
//
// Structure: one acceptor task, one task per connection; every wait
// (accept, recv, send, file reads) suspends only its task, so a few workers
// serve any number of idle keep-alive connections.
//
// What it does:
//  * GET and HEAD (405 with "Allow: GET, HEAD" otherwise); HTTP/1.1 and 1.0.
//  * Keep-alive: HTTP/1.1 connections stay open unless the request says
//    "Connection: close" (1.0 ones close unless it says "keep-alive"); a
//    connection idle for 5 s between requests is closed (recv get_for).
//  * The request head (request line and headers) is at most 8 KiB: longer is
//    answered 413 and the connection closed. A malformed request gets 400 and
//    the connection is closed. Requests with a body (Content-Length > 0 or
//    Transfer-Encoding) are answered and the connection closed (the body is
//    not read).
//  * Paths: the query string is dropped, %XX decoded (%00 refused); a ".."
//    segment is refused with 400 (no traversal out of ROOT); a directory
//    serves its index.html. Symbolic links inside ROOT are followed.
//  * Responses carry Content-Length and Content-Type (by file extension);
//    files are read with weft::io::read in 64 KiB pieces and sent with
//    weft::io::send loops.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <weft/io.hpp>
#include <weft/weft.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace {

using namespace std::chrono_literals;

constexpr std::size_t kMaxHead = 8 * 1024;
constexpr auto kIdleTimeout = 5s;
// The acceptor and idle connections look at the stop flag this often.
constexpr auto kPollSlice = 100ms;

struct config {
  std::string root;
  long long max_requests = -1;  // -1: unlimited
};

std::atomic<long long> g_served{0};
std::atomic<bool> g_stop{false};
config g_config;

// Counts a response; the one that reaches --requests stops the server.
// Returns true if this was the last one.
bool count_response() {
  const long long n = g_served.fetch_add(1) + 1;
  if (g_config.max_requests >= 0 && n >= g_config.max_requests) {
    g_stop = true;
    return true;
  }
  return false;
}

// Sends all of data (send loops: a send may be partial).
void send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const std::size_t n = weft::io::send(fd, data.data(), data.size()).get();
    data.remove_prefix(n);
  }
}

const char* status_text(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Content Too Large";
    default: return "Internal Server Error";
  }
}

std::string content_type(std::string_view path) {
  const auto dot = path.rfind('.');
  const auto slash = path.rfind('/');
  if (dot == std::string_view::npos || (slash != std::string_view::npos && dot < slash))
    return "application/octet-stream";
  std::string ext(path.substr(dot + 1));
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == "html" || ext == "htm") return "text/html; charset=utf-8";
  if (ext == "txt") return "text/plain; charset=utf-8";
  if (ext == "css") return "text/css; charset=utf-8";
  if (ext == "js") return "text/javascript; charset=utf-8";
  if (ext == "json") return "application/json";
  if (ext == "svg") return "image/svg+xml";
  if (ext == "png") return "image/png";
  if (ext == "jpg" || ext == "jpeg") return "image/jpeg";
  if (ext == "gif") return "image/gif";
  return "application/octet-stream";
}

std::string head_of(int status, std::size_t length, std::string_view type, bool keep_alive,
                    std::string_view extra = {}) {
  std::string h = "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) + "\r\n";
  h += "Server: weft-http-example\r\n";
  h += "Content-Length: " + std::to_string(length) + "\r\n";
  h += "Content-Type: " + std::string(type) + "\r\n";
  h += keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  h += extra;
  h += "\r\n";
  return h;
}

// An error page; the response is counted.
void send_error(int fd, int status, bool head_only, bool keep_alive) {
  const std::string body = std::to_string(status) + " " + status_text(status) + "\n";
  std::string extra = status == 405 ? "Allow: GET, HEAD\r\n" : "";
  std::string msg = head_of(status, body.size(), "text/plain; charset=utf-8", keep_alive, extra);
  if (!head_only) msg += body;
  send_all(fd, msg);
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
           return std::tolower(x) == std::tolower(y);
         });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The file path under the root for a request target, or nullopt if the target
// is malformed or tries to leave the root.
std::optional<std::string> map_path(std::string_view target) {
  if (target.empty() || target.front() != '/') return std::nullopt;
  target = target.substr(0, target.find_first_of("?#"));
  std::string decoded;
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i] != '%') {
      decoded += target[i];
      continue;
    }
    if (i + 2 >= target.size() || !std::isxdigit(static_cast<unsigned char>(target[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(target[i + 2])))
      return std::nullopt;
    const int v = std::stoi(std::string(target.substr(i + 1, 2)), nullptr, 16);
    if (v == 0) return std::nullopt;
    decoded += static_cast<char>(v);
    i += 2;
  }
  // Refuse ".." segments (after decoding: %2e%2e is ".." too).
  std::size_t start = 0;
  while (start <= decoded.size()) {
    std::size_t end = decoded.find('/', start);
    if (end == std::string::npos) end = decoded.size();
    if (std::string_view(decoded).substr(start, end - start) == "..") return std::nullopt;
    start = end + 1;
  }
  return g_config.root + decoded;
}

// Serves one GET/HEAD of `path` (counted by the caller): the file, or 404.
// Throws on a failed send or read (the connection then ends).
void serve_file(int fd, const std::string& path, bool head_only, bool keep_alive) {
  int file = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st{};
  if (file >= 0 && ::fstat(file, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(file);
    const std::string index = path + (path.back() == '/' ? "" : "/") + "index.html";
    file = ::open(index.c_str(), O_RDONLY | O_CLOEXEC);
    if (file >= 0 && ::fstat(file, &st) != 0) st = {};
  }
  if (file < 0 || !S_ISREG(st.st_mode)) {
    if (file >= 0) ::close(file);
    send_error(fd, 404, head_only, keep_alive);
    return;
  }
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_file{file};
  const auto size = static_cast<std::size_t>(st.st_size);
  send_all(fd, head_of(200, size, content_type(path), keep_alive));
  if (head_only) return;
  std::vector<char> buf(64 * 1024);
  std::size_t sent = 0;
  while (sent < size) {
    const std::size_t n = weft::io::read(file, buf.data(), std::min(buf.size(), size - sent)).get();
    if (n == 0) break;  // the file shrank: the client sees a short body and the close
    send_all(fd, std::string_view(buf.data(), n));
    sent += n;
  }
  if (sent < size) throw std::runtime_error("file shrank while being sent");
}

// One connection: requests until close, error, idle timeout or stop.
void connection(int fd) {
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_socket{fd};
  std::string buf;
  char chunk[4096];
  try {
    for (;;) {
      // Read until the end of the head, with the idle timeout.
      std::size_t head_end;
      const auto idle_deadline = std::chrono::steady_clock::now() + kIdleTimeout;
      while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
        if (buf.size() > kMaxHead) {
          count_response();
          send_error(fd, 413, false, false);
          return;
        }
        if (g_stop && buf.empty()) return;  // idle at shutdown
        if (std::chrono::steady_clock::now() >= idle_deadline) return;
        std::error_code ec;
        const std::size_t n = weft::io::recv(fd, chunk, sizeof chunk).get_for(kPollSlice, ec);
        if (ec == std::errc::timed_out) continue;
        if (ec || n == 0) return;  // reset or closed by the client
        buf.append(chunk, n);
      }
      if (head_end > kMaxHead) {
        count_response();
        send_error(fd, 413, false, false);
        return;
      }
      const std::string head = buf.substr(0, head_end);
      buf.erase(0, head_end + 4);

      // Request line.
      const std::size_t line_end = head.find("\r\n");
      const std::string_view line = std::string_view(head).substr(0, line_end);
      const auto sp1 = line.find(' ');
      const auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
      if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
        count_response();
        send_error(fd, 400, false, false);
        return;
      }
      const std::string_view method = line.substr(0, sp1);
      const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
      const std::string_view version = line.substr(sp2 + 1);
      bool keep_alive;
      if (version == "HTTP/1.1") keep_alive = true;
      else if (version == "HTTP/1.0") keep_alive = false;
      else {
        count_response();
        send_error(fd, 400, false, false);
        return;
      }
      // Headers.
      bool has_body = false, bad = false;
      std::size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
      while (pos < head.size()) {
        std::size_t end = head.find("\r\n", pos);
        if (end == std::string::npos) end = head.size();
        const std::string_view h = std::string_view(head).substr(pos, end - pos);
        pos = end + 2;
        const auto colon = h.find(':');
        if (colon == std::string_view::npos || colon == 0) {
          bad = true;
          continue;
        }
        const std::string_view name = h.substr(0, colon);
        const std::string_view value = trim(h.substr(colon + 1));
        if (iequals(name, "Connection")) {
          if (iequals(value, "close")) keep_alive = false;
          else if (iequals(value, "keep-alive")) keep_alive = true;
        } else if (iequals(name, "Content-Length")) {
          if (value != "0") has_body = true;
        } else if (iequals(name, "Transfer-Encoding")) {
          has_body = true;
        }
      }
      const bool head_only = method == "HEAD";
      if (has_body) keep_alive = false;  // its body is not read: the stream is lost
      if (count_response()) keep_alive = false;  // the last one: say so, then stop
      if (bad) {
        send_error(fd, 400, head_only, false);
        return;
      }
      if (method != "GET" && method != "HEAD") {
        send_error(fd, 405, false, false);
        return;
      }
      const std::optional<std::string> path = map_path(target);
      if (!path) {
        send_error(fd, 400, head_only, false);
        return;
      }
      serve_file(fd, *path, head_only, keep_alive);
      if (!keep_alive) return;
    }
  } catch (const std::exception& e) {
    // A peer that resets the connection mid-response is normal; log others.
    std::fprintf(stderr, "http_server: connection: %s\n", e.what());
  }
}

int listen_on(unsigned short port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "socket");
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 128) != 0) {
    const int e = errno;
    ::close(fd);
    throw std::system_error(e, std::system_category(), "bind/listen on 127.0.0.1");
  }
  return fd;
}

// The acceptor: a task per connection until stopped, then waits for them.
void serve(int listen_fd) {
  std::vector<weft::future<void>> connections;
  while (!g_stop) {
    std::error_code ec;
    // Bounded waits so that the stop flag is seen; a timed-out accept is
    // cancelled and its connection, if one arrives meanwhile, stays queued.
    const int fd = weft::io::accept(listen_fd).get_for(kPollSlice, ec);
    if (ec == std::errc::timed_out) continue;
    if (ec) {
      if (ec == std::errc::connection_aborted || ec == std::errc::too_many_files_open) continue;
      throw std::system_error(ec, "accept");
    }
    connections.push_back(weft::async(connection, fd));
    // Forget the finished ones (get() never throws: connection catches).
    std::erase_if(connections, [](weft::future<void>& f) {
      if (!f.is_ready()) return false;
      f.get();
      return true;
    });
  }
  ::close(listen_fd);
  for (auto& f : connections) f.get();
}

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: http_server ROOT PORT [--requests N] [--workers P]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) usage();
  g_config.root = argv[1];
  while (g_config.root.size() > 1 && g_config.root.back() == '/') g_config.root.pop_back();
  char* end = nullptr;
  const long port = std::strtol(argv[2], &end, 10);
  if (*end || port < 0 || port > 65535) usage();
  weft::options opts;
  for (int i = 3; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--requests" && i + 1 < argc) {
      g_config.max_requests = std::strtoll(argv[++i], &end, 10);
      if (*end || g_config.max_requests < 1) usage();
    } else if (a == "--workers" && i + 1 < argc) {
      opts.workers = static_cast<unsigned>(std::strtoul(argv[++i], &end, 10));
      if (*end) usage();
    } else {
      usage();
    }
  }
  struct stat st{};
  if (::stat(g_config.root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    std::fprintf(stderr, "http_server: %s is not a directory\n", g_config.root.c_str());
    return 1;
  }
  try {
    const int listen_fd = listen_on(static_cast<unsigned short>(port));
    sockaddr_in bound{};
    socklen_t len = sizeof bound;
    ::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound), &len);
    std::printf("%u\n", static_cast<unsigned>(ntohs(bound.sin_port)));
    std::fflush(stdout);
    weft::runtime rt(opts);
    rt.run([listen_fd] { serve(listen_fd); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "http_server: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "http_server: served %lld responses\n", g_served.load());
  return 0;
}
