// http_server — a small HTTP/1.1 static-file server on weft::io.
//
//   http_server ROOT PORT [--requests N] [--grace MS] [--workers P]
//
// Serves the regular files under ROOT on 127.0.0.1:PORT (0: any free port).
// Once listening it prints the port on a line of its own on stdout (and
// flushes), so a script can start it with PORT 0 and read where it is.
// --requests N: shut down gracefully after N responses, of any status;
// without it the server runs until SIGTERM or SIGINT, which shut it down
// gracefully too. Either way it exits with status 0.
//
// Structure: one acceptor task, one task per connection, one signal task;
// every wait (accept, recv, send, file reads, the signalfd) suspends only its
// task, so a few workers serve any number of idle keep-alive connections.
//
// Graceful shutdown (SIGTERM/SIGINT, read from a signalfd with
// weft::io::read — main blocks the signals before the runtime starts, so
// every thread inherits the mask — or the N-th response):
//  1. stop accepting: the pending accept is cancelled, the acceptor leaves
//     its loop and closes the listening socket;
//  2. idle keep-alive connections (waiting for a next request, nothing
//     received) are closed at once; a connection that finishes a response
//     closes instead of waiting for another request;
//  3. requests in flight may finish until the deadline, --grace MS after the
//     stop (default 2000);
//  4. then every connection still open is closed with weft::io::close: its
//     pending recv/send completes with bad_file_descriptor and its task ends;
//  5. exit 0.
// Who closes a connection: a registry (fd → idle?) under one mutex. The
// acceptor adds the socket; whoever removes it from the registry closes it —
// the connection task when it ends, or the shutdown. A connection starts each
// recv/send under that mutex, and only while its socket is still registered,
// so io::close by the shutdown covers every operation it could have pending
// and the task never touches the number again (which may have been reused).
// On the blocking backend (WEFT_IO=blocking) a waiting task holds its worker:
// the signal task and the acceptor keep one each, so give it 4 workers or
// more there (--workers, WEFT_WORKERS).
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
#include <pthread.h>
#include <signal.h>
#include <sys/signalfd.h>
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
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace {

using namespace std::chrono_literals;

constexpr std::size_t kMaxHead = 8 * 1024;
constexpr auto kIdleTimeout = 5s;

struct config {
  std::string root;
  long long max_requests = -1;  // -1: unlimited
  std::chrono::milliseconds grace{2000};
};

std::atomic<long long> g_served{0};
config g_config;

// Shutdown state and the connection registry, all under g_mutex. Never held
// across a suspension: only short sections (starting an operation does not
// suspend; waiting for it happens after the unlock).
std::mutex g_mutex;
bool g_stop = false;                                  // shutdown requested
std::chrono::steady_clock::time_point g_stop_time;    // when
weft::io::io_future<int>* g_pending_accept = nullptr;  // the acceptor's, while it waits
std::map<int, bool> g_open;                           // open connections: fd → idle?

// Starts the shutdown (once): the acceptor's pending accept is cancelled.
void request_stop() {
  std::lock_guard lock(g_mutex);
  if (g_stop) return;
  g_stop = true;
  g_stop_time = std::chrono::steady_clock::now();
  if (g_pending_accept) g_pending_accept->cancel();
}

bool stopping() {
  std::lock_guard lock(g_mutex);
  return g_stop;
}

// Counts a response; the one that reaches --requests stops the server.
// Returns true if this was the last one.
bool count_response() {
  const long long n = g_served.fetch_add(1) + 1;
  if (g_config.max_requests >= 0 && n >= g_config.max_requests) {
    request_stop();
    return true;
  }
  return false;
}

[[noreturn]] void closed_by_shutdown() {
  throw std::system_error(std::make_error_code(std::errc::bad_file_descriptor),
                          "closed at shutdown");
}

// Starts an operation on connection fd under g_mutex, if fd is still the
// connection's (see the header comment); otherwise throws bad_file_descriptor.
template <class Start>
auto start_on(int fd, Start start) {
  std::lock_guard lock(g_mutex);
  if (!g_open.contains(fd)) closed_by_shutdown();
  return start();
}

// Sends all of data (send loops: a send may be partial).
void send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const std::size_t n =
        start_on(fd, [&] { return weft::io::send(fd, data.data(), data.size()); }).get();
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

// One connection: requests until close, error, idle timeout or shutdown.
void connection(int fd) {
  // The task closes its socket when it ends, unless the shutdown took it.
  struct closer {
    int fd;
    ~closer() {
      bool mine;
      {
        std::lock_guard lock(g_mutex);
        mine = g_open.erase(fd) == 1;
      }
      std::error_code ec;
      if (mine) weft::io::close(fd, ec);
    }
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
        std::optional<weft::io::io_future<std::size_t>> recv;
        {
          std::lock_guard lock(g_mutex);
          const auto it = g_open.find(fd);
          if (it == g_open.end()) return;  // closed by the shutdown
          if (buf.empty() && g_stop) return;  // idle at shutdown: close now
          it->second = buf.empty();  // idle: the shutdown may close it at once
          recv.emplace(weft::io::recv(fd, chunk, sizeof chunk));
        }
        std::error_code ec;
        const std::size_t n = recv->get_until(idle_deadline, ec);
        // timed out (idle), reset or closed by the client, or closed by the
        // shutdown (bad_file_descriptor)
        if (ec || n == 0) return;
        {
          std::lock_guard lock(g_mutex);
          if (const auto it = g_open.find(fd); it != g_open.end()) it->second = false;
        }
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
      if (stopping()) keep_alive = false;        // shutting down: this is the last
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
  } catch (const std::system_error& e) {
    // A socket closed by the shutdown mid-response is expected; log others.
    if (e.code() != std::errc::bad_file_descriptor)
      std::fprintf(stderr, "http_server: connection: %s\n", e.what());
  } catch (const std::exception& e) {
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

// Closes (weft::io::close) the registered connections for which pick(idle)
// is true, after taking them out of the registry: their tasks will not close
// them, nor start anything more on them.
template <class Pick>
void close_connections(Pick pick) {
  std::vector<int> taken;
  {
    std::lock_guard lock(g_mutex);
    std::erase_if(g_open, [&](const auto& entry) {
      if (!pick(entry.second)) return false;
      taken.push_back(entry.first);
      return true;
    });
  }
  for (const int fd : taken) {
    std::error_code ec;
    weft::io::close(fd, ec);  // their pending recv/send: bad_file_descriptor
  }
}

// The acceptor: a task per connection until the shutdown, then the shutdown
// itself (steps 1 to 4 of the header comment).
void serve(int listen_fd) {
  std::vector<weft::future<void>> connections;
  for (;;) {
    weft::io::io_future<int> accept;
    {
      std::lock_guard lock(g_mutex);
      if (g_stop) break;
      accept = weft::io::accept(listen_fd);
      g_pending_accept = &accept;  // request_stop cancels it
    }
    accept.wait();  // not get(): request_stop may call cancel() meanwhile
    {
      std::lock_guard lock(g_mutex);
      g_pending_accept = nullptr;
    }
    std::error_code ec;
    const int fd = accept.get(ec);
    if (ec == std::errc::operation_canceled) break;  // request_stop
    if (ec) {
      if (ec == std::errc::connection_aborted || ec == std::errc::too_many_files_open) continue;
      throw std::system_error(ec, "accept");
    }
    {
      std::lock_guard lock(g_mutex);
      g_open.emplace(fd, false);
    }
    connections.push_back(weft::async(connection, fd));
    // Forget the finished ones (get() never throws: connection catches).
    std::erase_if(connections, [](weft::future<void>& f) {
      if (!f.is_ready()) return false;
      f.get();
      return true;
    });
  }
  // 1. No more accepts; a connection still in the backlog is reset.
  weft::io::close(listen_fd);
  std::chrono::steady_clock::time_point deadline;
  {
    std::lock_guard lock(g_mutex);
    deadline = g_stop_time + g_config.grace;
  }
  // 2. The idle connections go at once.
  close_connections([](bool idle) { return idle; });
  // 3. The others may finish until the deadline...
  for (auto& f : connections) f.wait_until(deadline);
  // 4. ...then whatever is left is closed under their feet.
  close_connections([](bool) { return true; });
  for (auto& f : connections) f.get();
}

// Reads SIGTERM/SIGINT from the signalfd and starts the shutdown; ends when
// a signal arrives or when main closes the signalfd (bad_file_descriptor).
void signal_task(int sig_fd) {
  signalfd_siginfo info{};
  std::error_code ec;
  const std::size_t n = weft::io::read(sig_fd, &info, sizeof info).get(ec);
  if (ec || n != sizeof info) return;
  std::fprintf(stderr, "http_server: %s: shutting down\n", strsignal(static_cast<int>(info.ssi_signo)));
  request_stop();
}

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: http_server ROOT PORT [--requests N] [--grace MS] [--workers P]\n");
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
    } else if (a == "--grace" && i + 1 < argc) {
      const long long ms = std::strtoll(argv[++i], &end, 10);
      if (*end || ms < 0) usage();
      g_config.grace = std::chrono::milliseconds(ms);
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
  // SIGTERM and SIGINT are read from a signalfd: block them first, before the
  // runtime starts its threads, so that every thread inherits the mask and
  // none of them gets the default action (termination).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  if (int e = ::pthread_sigmask(SIG_BLOCK, &signals, nullptr); e != 0) {
    std::fprintf(stderr, "http_server: pthread_sigmask: %s\n", std::strerror(e));
    return 1;
  }
  const int sig_fd = ::signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sig_fd < 0) {
    std::fprintf(stderr, "http_server: signalfd: %s\n", std::strerror(errno));
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
    rt.run([listen_fd, sig_fd] {
      auto signals_done = weft::async(signal_task, sig_fd);
      // Ends the signal task if no signal came (shutdown by --requests), also
      // when serve throws.
      struct close_signals {
        int fd;
        ~close_signals() {
          std::error_code ec;
          weft::io::close(fd, ec);
        }
      };
      {
        close_signals guard{sig_fd};
        serve(listen_fd);
      }
      signals_done.get();
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "http_server: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "http_server: served %lld responses\n", g_served.load());
  return 0;
}
