// weft::io::wait_readable / wait_writable with a descriptor owned by a real
// library: libcurl's multi interface, driven from a weft task through
// CURLMOPT_SOCKETFUNCTION / CURLMOPT_TIMERFUNCTION and
// curl_multi_socket_action (curl's "event-based" API: the application waits
// for readiness, curl does the I/O). The transfer fetches from a small HTTP
// server thread on 127.0.0.1 (no network) that answers late and in chunks,
// so the waits really are pending. Every backend x 1, 2 workers.
#include <curl/curl.h>

#include <cstring>
#include <map>
#include <string>

#include "io_test_util.hpp"

namespace weft_io_test {
namespace {

class IoForeign : public IoTest {
 protected:
  static void SetUpTestSuite() {
    // Once, before any thread of the test exists (curl_global_init is not
    // thread-safe), and before IoTest counts the open descriptors.
    static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    ASSERT_EQ(rc, CURLE_OK);
  }
};

std::vector<io_param> foreign_params() {
  std::vector<io_param> v;
  for (auto b : {weft::io_backend::epoll, weft::io_backend::io_uring, weft::io_backend::blocking})
    for (unsigned w : {1u, 2u}) v.push_back({b, weft::steal_policy::proactive, w, true});
  return v;
}

// The response body: deterministic, large enough to take several reads.
std::string body_for(int request) {
  std::string b;
  const std::size_t n = 96 * 1024 + static_cast<std::size_t>(request) * 7;
  b.reserve(n);
  for (std::size_t i = 0; b.size() < n; ++i)
    b += "line " + std::to_string(request) + ":" + std::to_string(i) + "\n";
  b.resize(n);
  return b;
}

// Serves `count` HTTP/1.1 requests on 127.0.0.1 with plain system calls,
// each on its own connection and thread (so that no transfer waits for
// another to be read): waits 40 ms before answering (so the client's
// read-readiness wait is pending), then sends the body in 16 KiB pieces
// 2 ms apart. Every call is bounded (poll timeouts): a broken client makes
// the server give up rather than hang the test.
class http_server {
 public:
  explicit http_server(int count) : listener_(make_listener(&addr_)) {
    thread_ = std::thread([this, count] {
      std::vector<std::thread> conns;
      for (int i = 0; i < count; ++i) {
        pollfd p{listener_.get(), POLLIN, 0};
        if (::poll(&p, 1, 10000) <= 0) break;
        int c = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) break;
        conns.emplace_back([c] {
          unique_fd owned(c);
          serve(c);
        });
      }
      for (auto& t : conns) t.join();
    });
  }
  ~http_server() { thread_.join(); }
  std::uint16_t port() const { return ntohs(addr_.sin_port); }

 private:
  static void serve(int fd) {
    std::string req;
    char buf[1024];
    while (req.find("\r\n\r\n") == std::string::npos) {
      std::size_t n;
      try {
        n = plain_read_some(fd, buf, sizeof buf, 10s);
      } catch (...) {
        return;
      }
      if (n == 0) return;
      req.append(buf, n);
    }
    // "GET /<n> HTTP/1.1"
    int request = std::atoi(req.c_str() + 5);
    const std::string body = body_for(request);
    std::this_thread::sleep_for(40ms);
    const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
    try {
      plain_write_all(fd, head.data(), head.size(), 10s);
      for (std::size_t off = 0; off < body.size(); off += 16384) {
        plain_write_all(fd, body.data() + off, std::min<std::size_t>(16384, body.size() - off),
                        10s);
        std::this_thread::sleep_for(2ms);
      }
    } catch (...) {
    }
  }

  sockaddr_in addr_{};
  unique_fd listener_;
  std::thread thread_;
};

// One curl multi handle driven by weft readiness waits.
struct curl_driver {
  CURLM* multi = curl_multi_init();
  std::map<curl_socket_t, int> sockets;  // what curl wants: CURL_POLL_IN/OUT/INOUT
  long timer_ms = -1;                    // -1: no timer
  int waits = 0, pending_waits = 0, timer_expiries = 0;

  curl_driver() {
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, &curl_driver::on_socket);
    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, &curl_driver::on_timer);
    curl_multi_setopt(multi, CURLMOPT_TIMERDATA, this);
  }
  ~curl_driver() { curl_multi_cleanup(multi); }

  static int on_socket(CURL*, curl_socket_t s, int what, void* self, void*) {
    auto* d = static_cast<curl_driver*>(self);
    if (what == CURL_POLL_REMOVE)
      d->sockets.erase(s);
    else
      d->sockets[s] = what;
    return 0;
  }
  static int on_timer(CURLM*, long timeout_ms, void* self) {
    static_cast<curl_driver*>(self)->timer_ms = timeout_ms;
    return 0;
  }

  // Runs the transfers added to `multi` to completion. For each socket curl
  // watches, one weft wait in the direction it asks for (INOUT: writable
  // first, which a connected socket is at once; curl then says what it
  // wants next), bounded by curl's timer.
  void run() {
    int running = 0;
    curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
    while (running) {
      const auto limit = timer_ms < 0 ? std::chrono::milliseconds(5000)
                                      : std::chrono::milliseconds(timer_ms);
      if (sockets.empty()) {
        weft::io::sleep_for(limit).get();
        ++timer_expiries;
        curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
        continue;
      }
      // Every socket's wait starts now; the first is waited with the timer,
      // the others are then checked without waiting (curl has one socket
      // per transfer here).
      struct pending {
        curl_socket_t s;
        int ev;
        weft::io::io_future<void> f;
      };
      std::vector<pending> ps;
      for (auto [s, what] : sockets) {
        const bool out = what == CURL_POLL_OUT || what == CURL_POLL_INOUT;
        ps.push_back({s, out ? CURL_CSELECT_OUT : CURL_CSELECT_IN,
                      out ? weft::io::wait_writable(s) : weft::io::wait_readable(s)});
        ++waits;
      }
      std::vector<std::pair<curl_socket_t, int>> ready;
      for (std::size_t i = 0; i < ps.size(); ++i) {
        std::error_code ec;
        if (i == 0) {
          if (!ps[i].f.is_ready()) ++pending_waits;
          ps[i].f.get_for(limit, ec);
        } else if (ps[i].f.is_ready()) {
          ps[i].f.get(ec);
        } else {
          ps[i].f.cancel();
          ps[i].f.get(ec);
          continue;
        }
        if (!ec) {
          ready.emplace_back(ps[i].s, ps[i].ev);
        } else if (ec == std::errc::timed_out) {
          // curl's timer expired first.
        } else {
          ADD_FAILURE() << "wait on curl's socket: " << ec.message();
          return;
        }
      }
      // No wait is pending from here on: curl may close its sockets.
      ps.clear();
      if (ready.empty()) {
        ++timer_expiries;
        curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
      }
      for (auto [s, ev] : ready) curl_multi_socket_action(multi, s, ev, &running);
    }
  }
};

size_t append_body(char* p, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(p, size * n);
  return size * n;
}

TEST_P(IoForeign, CurlMultiFetchesThroughReadinessWaits) {
  constexpr int transfers = 3;
  http_server server(transfers);
  std::string bodies[transfers];
  long codes[transfers] = {};
  int waits = 0, pending_waits = 0;
  run([&] {
    curl_driver d;
    CURL* easy[transfers];
    for (int i = 0; i < transfers; ++i) {
      easy[i] = curl_easy_init();
      ASSERT_NE(easy[i], nullptr);
      const std::string url =
          "http://127.0.0.1:" + std::to_string(server.port()) + "/" + std::to_string(i);
      curl_easy_setopt(easy[i], CURLOPT_URL, url.c_str());
      curl_easy_setopt(easy[i], CURLOPT_NOPROXY, "*");  // never an http_proxy from the environment
      curl_easy_setopt(easy[i], CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(easy[i], CURLOPT_WRITEFUNCTION, &append_body);
      curl_easy_setopt(easy[i], CURLOPT_WRITEDATA, &bodies[i]);
      curl_easy_setopt(easy[i], CURLOPT_TIMEOUT_MS, 20000L);
      curl_easy_setopt(easy[i], CURLOPT_FORBID_REUSE, 1L);
      ASSERT_EQ(curl_multi_add_handle(d.multi, easy[i]), CURLM_OK);
    }
    d.run();
    int msgs = 0;
    while (CURLMsg* m = curl_multi_info_read(d.multi, &msgs)) {
      if (m->msg != CURLMSG_DONE) continue;
      EXPECT_EQ(m->data.result, CURLE_OK) << curl_easy_strerror(m->data.result);
    }
    for (int i = 0; i < transfers; ++i) {
      curl_easy_getinfo(easy[i], CURLINFO_RESPONSE_CODE, &codes[i]);
      curl_multi_remove_handle(d.multi, easy[i]);
      curl_easy_cleanup(easy[i]);
    }
    waits = d.waits;
    pending_waits = d.pending_waits;
  });
  for (int i = 0; i < transfers; ++i) {
    EXPECT_EQ(codes[i], 200) << "transfer " << i;
    EXPECT_TRUE(bodies[i] == body_for(i))
        << "transfer " << i << ": body of " << bodies[i].size() << " bytes, expected "
        << body_for(i).size();
  }
  // The server answers 40 ms late and in pieces: curl had to wait.
  EXPECT_GT(waits, transfers);
  EXPECT_GT(pending_waits, 0);
  RecordProperty("waits", waits);
  RecordProperty("pending_waits", pending_waits);
}

INSTANTIATE_TEST_SUITE_P(Io, IoForeign, ::testing::ValuesIn(foreign_params()), param_name);

}  // namespace
}  // namespace weft_io_test
