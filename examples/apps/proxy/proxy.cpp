// weft example app — the caching proxy (I-Cilk §5.2, Figure 7). proxy.hpp
// describes the program; this file is its logic.
//
// Wire formats (all on loopback TCP, integers in host byte order: both ends
// are this process):
//   client -> proxy   64 bytes: u64 send time (steady_clock ns), then the URL,
//                     NUL-padded to 56 bytes
//   proxy -> client   16 bytes: u8 status (1 hit, 2 miss), 7 bytes zero, u64
//                     page length; then the page
//   proxy -> origin   56 bytes: the URL, NUL-padded (one request per
//                     connection: the proxy connects for every miss)
//   origin -> proxy   u64 page length, then the page
//
// Levels (weft::priority, 0 most urgent):
//   0  accept loop and one request loop per client connection: reads a
//      request, notes the response time (resp), hands it to level 1;
//   1  serve: looks the URL up in the cache; a hit is sent at once; a miss
//      goes to level 2. Also "store": put a fetched page in the cache and
//      send it. Storing runs at level 1, handed over by the level-2 fetch,
//      so that the cache's lock is never held by a task of level 2 while a
//      level-1 task waits for it (docs/priorities.md, "Locks");
//   2  fetch: connect to the page's origin with weft::io, read the page,
//      compute a digest over it (miss_work passes, yielding between chunks:
//      the CPU work of a miss), hand the page to level 1;
//   3  the root: every stats_period, one round of cache statistics.
// No task waits on a less urgent one: the request loop does not wait for its
// serve task (the client sends its next request only after the reply), and
// the root (level 3) waits for the accept loop (level 0).
#include "proxy.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>

#include <weft/io.hpp>
#include <weft/weft.hpp>

namespace weft_app::proxy {
namespace {

using clock = std::chrono::steady_clock;
constexpr std::size_t url_len = 56;
constexpr std::size_t req_len = 8 + url_len;
constexpr std::size_t hdr_len = 16;
constexpr std::uint8_t status_hit = 1, status_miss = 2;

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count());
}

std::uint64_t fnv1a(const char* p, std::size_t n, std::uint64_t h = 1469598103934665603ull) {
  for (std::size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(p[i]);
    h *= 1099511628211ull;
  }
  return h;
}
std::uint64_t hash_url(const std::string& url) { return fnv1a(url.data(), url.size()); }

std::uint64_t splitmix64(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

[[noreturn]] void sys_fail(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

// A listening socket on 127.0.0.1, on a port the kernel picks.
struct listener {
  int fd = -1;
  int port = 0;
  listener() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) sys_fail("socket");
    sockaddr_in a = loopback(0);
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 512) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      int e = errno;
      ::close(fd);
      errno = e;
      sys_fail("listen on loopback");
    }
    port = ntohs(a.sin_port);
  }
  ~listener() {
    if (fd >= 0) ::close(fd);
  }
  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;
};

// Blocking helpers for the plain threads (origins, clients).
bool recv_all(int fd, void* buf, std::size_t n) {  // false on EOF before n bytes
  auto* p = static_cast<char*>(buf);
  std::size_t got = 0;
  while (got < n) {
    ssize_t k = ::recv(fd, p + got, n - got, 0);
    if (k == 0) return false;
    if (k < 0) {
      if (errno == EINTR) continue;
      sys_fail("recv");
    }
    got += static_cast<std::size_t>(k);
  }
  return true;
}
void send_all(int fd, const void* buf, std::size_t n) {
  const auto* p = static_cast<const char*>(buf);
  std::size_t sent = 0;
  while (sent < n) {
    ssize_t k = ::send(fd, p + sent, n - sent, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      sys_fail("send");
    }
    sent += static_cast<std::size_t>(k);
  }
}

// Collects error messages from any thread or task.
class error_list {
 public:
  void add(std::string e) {
    std::lock_guard<std::mutex> l(m_);  // short, never across a suspension point
    if (errors_.size() < 20) errors_.push_back(std::move(e));
  }
  std::vector<std::string> take() {
    std::lock_guard<std::mutex> l(m_);
    return std::move(errors_);
  }

 private:
  std::mutex m_;
  std::vector<std::string> errors_;
};

// ---- origin servers ----------------------------------------------------------
// `threads` plain threads accept on one listening socket; each serves one
// connection at a time (further connections wait in the backlog).
class origin {
 public:
  origin(const options& opt, error_list& errors) : opt_(opt), errors_(errors) {
    for (unsigned i = 0; i < opt.origin_threads; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~origin() { stop(); }
  // Joins the threads (idempotent). Wakes those blocked in accept by shutting
  // the listening socket down (Linux: accept then fails with EINVAL).
  void stop() {
    if (threads_.empty()) return;
    // Relaxed: a thread reads it only after its accept failed, and the
    // join below orders everything else.
    stopping_.store(true, std::memory_order_relaxed);
    ::shutdown(lis_.fd, SHUT_RDWR);
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  origin(const origin&) = delete;
  origin& operator=(const origin&) = delete;
  int port() const { return lis_.port; }
  // Requests answered; read after stop() (relaxed: a counter, the join orders it).
  std::uint64_t served() const { return served_.load(std::memory_order_relaxed); }

 private:
  void loop() {
    for (;;) {
      int c = ::accept4(lis_.fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        if (stopping_.load(std::memory_order_relaxed)) return;
        if (errno == EINTR || errno == ECONNABORTED) continue;
        errors_.add(std::string("origin: accept: ") + std::strerror(errno));
        return;
      }
      try {
        serve(c);
      } catch (const std::exception& e) {
        errors_.add(std::string("origin: ") + e.what());
      }
      ::close(c);
    }
  }
  void serve(int c) {
    set_nodelay(c);
    char u[url_len];
    std::vector<char> buf;
    while (recv_all(c, u, url_len)) {
      std::string url(u, ::strnlen(u, url_len));
      if (opt_.origin_latency_us)
        std::this_thread::sleep_for(std::chrono::microseconds(opt_.origin_latency_us));
      std::uint64_t n = page_bytes(url, opt_.page_min, opt_.page_max);
      buf.resize(8 + n);
      std::memcpy(buf.data(), &n, 8);
      fill_page(url, buf.data() + 8, n);
      send_all(c, buf.data(), buf.size());
      served_.fetch_add(1, std::memory_order_relaxed);  // a counter, read after join
    }
  }

  const options& opt_;
  error_list& errors_;
  listener lis_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> served_{0};
  std::vector<std::thread> threads_;  // last: started after the members they use
};

// ---- the cache ----------------------------------------------------------------
using page_ptr = std::shared_ptr<const std::string>;

// LRU map URL -> page, bounded by the pages' bytes. Every operation holds a
// weft::mutex briefly and never suspends while holding it (a hit moves its
// entry to the front, so lookups need the lock exclusively too).
class lru_cache {
 public:
  explicit lru_cache(std::size_t cap) : cap_(cap) {}

  page_ptr get(const std::string& url) {
    std::lock_guard<weft::mutex> l(m_);
    auto it = index_.find(url);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    ++it->second->hits;
    return it->second->page;
  }
  void put(const std::string& url, page_ptr page) {
    std::lock_guard<weft::mutex> l(m_);
    auto it = index_.find(url);
    if (it != index_.end()) {  // two misses of one URL raced: keep the newer copy
      bytes_ -= it->second->page->size();
      it->second->page = page;
      order_.splice(order_.begin(), order_, it->second);
    } else {
      order_.push_front(entry{url, page, 0});
      index_.emplace(url, order_.begin());
    }
    bytes_ += page->size();
    while (bytes_ > cap_ && order_.size() > 1) {
      entry& victim = order_.back();
      bytes_ -= victim.page->size();
      index_.erase(victim.url);
      order_.pop_back();
      ++evictions_;
    }
  }
  // (size, hits) of every entry, most recent first.
  std::vector<std::pair<std::size_t, std::uint64_t>> snapshot() {
    std::vector<std::pair<std::size_t, std::uint64_t>> out;
    std::lock_guard<weft::mutex> l(m_);
    out.reserve(order_.size());
    for (const entry& e : order_) out.emplace_back(e.page->size(), e.hits);
    return out;
  }
  std::size_t entries() {
    std::lock_guard<weft::mutex> l(m_);
    return order_.size();
  }
  std::uint64_t evictions() {
    std::lock_guard<weft::mutex> l(m_);
    return evictions_;
  }

 private:
  struct entry {
    std::string url;
    page_ptr page;
    std::uint64_t hits;
  };
  weft::mutex m_;
  std::list<entry> order_;  // guarded by m_; front: most recently used
  std::unordered_map<std::string, std::list<entry>::iterator> index_;  // guarded by m_
  std::size_t bytes_ = 0;         // guarded by m_
  std::uint64_t evictions_ = 0;   // guarded by m_
  const std::size_t cap_;
};

// ---- the proxy ------------------------------------------------------------------
struct connection {
  int fd;
  explicit connection(int f) : fd(f) {}
  // The last owner is a task that has finished its I/O on fd (the client
  // waits for each reply before it sends again or hangs up), so no weft
  // operation is pending on it: a plain close is enough.
  ~connection() { ::close(fd); }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;
};
using conn_ptr = std::shared_ptr<connection>;

struct proxy_state {
  explicit proxy_state(const options& o, error_list& e) : opt(o), errors(e), cache(o.cache_bytes) {}
  const options& opt;
  error_list& errors;
  lru_cache cache;
  std::vector<int> origin_ports;
  // Counters (relaxed: read after the runtime has joined its workers).
  std::atomic<std::uint64_t> hits{0}, misses{0}, digest_sink{0}, replies{0};
  std::vector<std::vector<double>> resp_us;  // one per connection, written by its loop only
  std::vector<double> stat_us_per_entry;     // written by the root only
};

// A reply that cannot be sent (or a fetch that failed): the error is noted
// and the client's connection shut down, so that the client sees EOF
// instead of waiting for ever.
void fail_request(proxy_state& st, const conn_ptr& c, const std::string& what) {
  st.errors.add("proxy: " + what);
  std::error_code ec;
  weft::io::shutdown(c->fd, SHUT_RDWR, ec);
}

void write_reply(const conn_ptr& c, std::uint8_t status, const std::string& page) {
  char hdr[hdr_len] = {};
  hdr[0] = static_cast<char>(status);
  std::uint64_t n = page.size();
  std::memcpy(hdr + 8, &n, 8);
  iovec iov[2] = {{hdr, hdr_len}, {const_cast<char*>(page.data()), page.size()}};
  // One writev for header and page, then write_all for a partial rest.
  std::size_t sent = weft::io::writev(c->fd, iov, 2).get();
  if (sent < hdr_len) {
    weft::io::write_all(c->fd, hdr + sent, hdr_len - sent);
    sent = hdr_len;
  }
  std::size_t done = sent - hdr_len;
  if (done < page.size()) weft::io::write_all(c->fd, page.data() + done, page.size() - done);
}

void send_page(proxy_state& st, const conn_ptr& c, std::uint8_t status, const std::string& page) {
  // options::corrupt_every (tests of the clients' check): a copy with one
  // byte flipped. Relaxed: a counter.
  if (st.opt.corrupt_every &&
      (st.replies.fetch_add(1, std::memory_order_relaxed) + 1) % st.opt.corrupt_every == 0) {
    std::string bad = page;
    bad[bad.size() / 2] = static_cast<char>(bad[bad.size() / 2] ^ 1);
    return write_reply(c, status, bad);
  }
  write_reply(c, status, page);
}

// Level 1: a fetched page goes into the cache and to the client.
void store(proxy_state& st, const conn_ptr& c, const std::string& url, const page_ptr& page) {
  try {
    st.cache.put(url, page);
    send_page(st, c, status_miss, *page);
  } catch (const std::exception& e) {
    fail_request(st, c, "store " + url + ": " + e.what());
  }
}

// Level 2: fetch from the origin, digest, hand over to level 1.
void fetch(proxy_state& st, const conn_ptr& c, const std::string& url) {
  try {
    const int port = st.origin_ports[hash_url(url) % st.origin_ports.size()];
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) sys_fail("socket");
    struct closer {
      int fd;
      ~closer() {
        std::error_code ec;
        weft::io::close(fd, ec);
      }
    } close_fd{fd};
    sockaddr_in a = loopback(port);
    weft::io::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a).get();
    set_nodelay(fd);
    char u[url_len] = {};
    std::memcpy(u, url.data(), std::min(url.size(), url_len));
    weft::io::write_all(fd, u, url_len);
    std::uint64_t n = 0;
    if (weft::io::read_exact(fd, &n, 8) != 8) throw std::runtime_error("origin closed early");
    if (n > st.opt.page_max) throw std::runtime_error("origin sent a page too large");
    auto page = std::make_shared<std::string>(n, '\0');
    if (weft::io::read_exact(fd, page->data(), n) != n) throw std::runtime_error("origin sent a short page");
    // The miss's CPU work: a digest over the page, miss_work passes, with a
    // yield (a point where APS may move the worker) every 16 KiB.
    std::uint64_t d = 0;
    constexpr std::size_t chunk = 16384;
    for (unsigned pass = 0; pass < st.opt.miss_work; ++pass) {
      for (std::size_t off = 0; off < n; off += chunk) {
        d = fnv1a(page->data() + off, std::min(chunk, n - off), d ^ pass);
        weft::this_task::yield();
      }
    }
    st.digest_sink.fetch_xor(d, std::memory_order_relaxed);  // keeps the digest; a sink, never read for order
    page_ptr done = std::move(page);
    (void)weft::async(weft::priority(1), [&st, c, url, done] { store(st, c, url, done); });
  } catch (const std::exception& e) {
    fail_request(st, c, "fetch " + url + ": " + e.what());
  }
}

// Level 1: answer from the cache, or hand the miss to level 2.
void serve(proxy_state& st, const conn_ptr& c, const std::string& url) {
  try {
    if (page_ptr page = st.cache.get(url)) {
      st.hits.fetch_add(1, std::memory_order_relaxed);  // counter, read after the run
      send_page(st, c, status_hit, *page);
      return;
    }
    st.misses.fetch_add(1, std::memory_order_relaxed);  // counter, read after the run
    (void)weft::async(weft::priority(2), [&st, c, url] { fetch(st, c, url); });
  } catch (const std::exception& e) {
    fail_request(st, c, "serve " + url + ": " + e.what());
  }
}

// Level 0: one client connection's request loop.
void request_loop(proxy_state& st, const conn_ptr& c, std::vector<double>& resp) {
  char req[req_len];
  while (weft::io::read_exact(c->fd, req, req_len) == req_len) {
    std::uint64_t sent = 0;
    std::memcpy(&sent, req, 8);
    std::string url(req + 8, ::strnlen(req + 8, url_len));
    (void)weft::async(weft::priority(1), [&st, c, url = std::move(url)] { serve(st, c, url); });
    // The proxy has reacted: the request is read and its handling started.
    resp.push_back(static_cast<double>(now_ns() - sent) / 1e3);
  }
}

// Level 3: one round of statistics over the cache: bytes, hits, the ten most
// requested pages, a histogram of sizes.
void stats_round(proxy_state& st) {
  auto t0 = clock::now();
  auto snap = st.cache.snapshot();
  if (snap.empty()) return;
  std::uint64_t bytes = 0, hits = 0;
  std::size_t hist[16] = {};
  for (auto& [size, h] : snap) {
    bytes += size;
    hits += h;
    std::size_t b = 0;
    for (std::size_t s = size; s > 1024 && b < 15; s >>= 1) ++b;
    ++hist[b];
  }
  std::size_t top = std::min<std::size_t>(10, snap.size());
  std::partial_sort(snap.begin(), snap.begin() + static_cast<std::ptrdiff_t>(top), snap.end(),
                    [](const auto& a, const auto& b) { return a.second > b.second; });
  std::uint64_t top_hits = 0;
  for (std::size_t i = 0; i < top; ++i) top_hits += snap[i].second;
  st.digest_sink.fetch_xor(bytes ^ hits ^ top_hits ^ hist[0], std::memory_order_relaxed);  // a sink
  double us = std::chrono::duration<double, std::micro>(clock::now() - t0).count();
  st.stat_us_per_entry.push_back(us / static_cast<double>(snap.size()));
}

// ---- clients ------------------------------------------------------------------------
struct client_out {
  std::vector<double> hit_us_per_byte, miss_us_per_byte;
  std::uint64_t requests = 0, hits = 0, misses = 0, bytes = 0;
  clock::time_point start, end;
  std::string error;
};

void client(const options& opt, int port, unsigned id, client_out& out) {
  out.start = out.end = clock::now();
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  try {
    if (fd < 0) sys_fail("socket");
    sockaddr_in a = loopback(port);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) sys_fail("connect");
    set_nodelay(fd);
    timeval tv{30, 0};  // a lost reply fails the run instead of hanging it
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::mt19937_64 g(opt.seed * 7919 + id);
    std::uniform_int_distribution<unsigned> think(0, opt.think_us);
    std::uniform_real_distribution<double> coin(0, 1);
    std::uniform_int_distribution<unsigned> hot(0, opt.hot_pages - 1);
    std::vector<char> got, want;
    out.start = clock::now();
    for (unsigned i = 0; i < opt.requests; ++i) {
      if (opt.think_us) std::this_thread::sleep_for(std::chrono::microseconds(think(g)));
      std::string url = coin(g) < opt.hit_ratio ? "/hot/" + std::to_string(hot(g))
                                                : "/c" + std::to_string(id) + "/r" + std::to_string(i);
      char req[req_len] = {};
      std::memcpy(req + 8, url.data(), url.size());
      const auto t0 = clock::now();
      std::uint64_t sent = now_ns();
      std::memcpy(req, &sent, 8);
      send_all(fd, req, req_len);
      char hdr[hdr_len];
      if (!recv_all(fd, hdr, hdr_len)) throw std::runtime_error("proxy closed the connection");
      std::uint64_t n = 0;
      std::memcpy(&n, hdr + 8, 8);
      const std::size_t expect = page_bytes(url, opt.page_min, opt.page_max);
      if (n != expect)
        throw std::runtime_error(url + ": length " + std::to_string(n) + ", origin's " + std::to_string(expect));
      got.resize(n);
      if (!recv_all(fd, got.data(), n)) throw std::runtime_error("proxy closed the connection mid-page");
      const double us = std::chrono::duration<double, std::micro>(clock::now() - t0).count();
      want.resize(n);
      fill_page(url, want.data(), n);
      if (std::memcmp(got.data(), want.data(), n) != 0)
        throw std::runtime_error(url + ": the bytes differ from the origin's page");
      const auto status = static_cast<std::uint8_t>(hdr[0]);
      if (status == status_hit) {
        ++out.hits;
        out.hit_us_per_byte.push_back(us / static_cast<double>(n));
      } else if (status == status_miss) {
        ++out.misses;
        out.miss_us_per_byte.push_back(us / static_cast<double>(n));
      } else {
        throw std::runtime_error("bad status byte " + std::to_string(status));
      }
      ++out.requests;
      out.bytes += n;
    }
    out.end = clock::now();
  } catch (const std::exception& e) {
    out.end = clock::now();
    out.error = "client " + std::to_string(id) + ": " + e.what();
  }
  if (fd >= 0) ::close(fd);  // EOF ends the proxy's request loop
}

void quiet_inversion(const weft::lock_inversion&) {}  // counted by weft::lock_inversions()

}  // namespace

std::size_t page_bytes(const std::string& url, std::size_t page_min, std::size_t page_max) {
  return page_min + static_cast<std::size_t>(hash_url(url) % (page_max - page_min + 1));
}

void fill_page(const std::string& url, char* out, std::size_t n) {
  std::uint64_t s = hash_url(url) ^ 0x5eedull;
  for (std::size_t i = 0; i < n; i += 8) {
    std::uint64_t v = splitmix64(s);
    std::memcpy(out + i, &v, std::min<std::size_t>(8, n - i));
  }
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  double rank = std::ceil(p / 100.0 * static_cast<double>(v.size()));
  std::size_t i = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
  return v[std::min(i, v.size() - 1)];
}

double mean(const std::vector<double>& v) {
  if (v.empty()) return NAN;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

std::string validate(const options& o) {
  if (o.workers < 1 || o.workers > 256) return "workers must be in 1..256";
  if (o.clients < 1 || o.clients > 1000) return "clients must be in 1..1000";
  if (o.requests < 1) return "requests must be at least 1";
  if (!(o.hit_ratio >= 0 && o.hit_ratio <= 1)) return "hit ratio must be in [0, 1]";
  if (o.hot_pages < 1) return "hot pages must be at least 1";
  if (o.page_min < 1 || o.page_min > o.page_max) return "page sizes: need 1 <= min <= max";
  if (o.page_max > (64u << 20)) return "page max must be at most 64 MiB";
  if (o.cache_bytes < o.page_max) return "the cache must hold at least one page (cache >= page max)";
  if (o.origins < 1 || o.origins > 64) return "origins must be in 1..64";
  if (o.origin_threads < 1 || o.origin_threads > 256) return "origin threads must be in 1..256";
  if (o.stats_period_ms < 1) return "stats period must be at least 1 ms";
  if (o.quantum_us < 10) return "quantum must be at least 10 us";
  if (!(o.rho >= 1)) return "rho must be >= 1";
  return "";
}

results run(const options& opt) {
  if (std::string why = validate(opt); !why.empty()) throw std::invalid_argument(why);
  error_list errors;
  results r;
  const std::uint64_t inversions_before = weft::lock_inversions();
  // Inversions are counted (results::lock_inversions), not printed.
  weft::lock_inversion_handler previous = weft::set_lock_inversion_handler(quiet_inversion);
  struct restore {
    weft::lock_inversion_handler h;
    ~restore() { weft::set_lock_inversion_handler(h); }
  } restore_handler{previous};

  std::vector<std::unique_ptr<origin>> origins;
  for (unsigned i = 0; i < opt.origins; ++i) origins.push_back(std::make_unique<origin>(opt, errors));
  proxy_state st(opt, errors);
  for (auto& o : origins) st.origin_ports.push_back(o->port());
  st.resp_us.resize(opt.clients);

  listener lis;  // clients' connections wait in its backlog until accepted
  std::vector<client_out> outs(opt.clients);
  std::vector<std::thread> clients;
  std::exception_ptr failure;
  {
    weft::options ro;
    ro.workers = opt.workers;
    ro.priorities = opt.oblivious ? weft::options::priority_mode::oblivious
                                  : weft::options::priority_mode::adaptive;
    ro.aps_quantum = std::chrono::microseconds(opt.quantum_us);
    ro.aps_responsiveness = opt.rho;
    weft::runtime rt(ro);
    for (unsigned i = 0; i < opt.clients; ++i)
      clients.emplace_back(client, std::cref(opt), lis.port, i, std::ref(outs[i]));
    try {
      rt.run(weft::priority(3), [&] {
        // Set by the accept loop when every request loop has ended; the
        // release/acquire pair makes their work visible to the root.
        std::atomic<bool> done{false};
        auto acceptor = weft::async(weft::priority(0), [&] {
          struct finish {
            std::atomic<bool>& done;
            ~finish() { done.store(true, std::memory_order_release); }
          } mark_done{done};
          std::vector<weft::future<void>> loops;
          for (unsigned i = 0; i < opt.clients; ++i) {
            // A client that never connects (it failed first) ends the run
            // with an error instead of hanging it.
            int fd = weft::io::accept(lis.fd).get_for(std::chrono::seconds(30));
            auto c = std::make_shared<connection>(fd);
            set_nodelay(c->fd);
            loops.push_back(weft::async(weft::priority(0), [&st, c, i] { request_loop(st, c, st.resp_us[i]); }));
          }
          std::exception_ptr first;
          for (auto& l : loops) {
            try {
              l.get();
            } catch (...) {
              if (!first) first = std::current_exception();
            }
          }
          if (first) std::rethrow_exception(first);
        });
        while (!done.load(std::memory_order_acquire)) {
          weft::this_task::sleep_for(std::chrono::milliseconds(opt.stats_period_ms));
          stats_round(st);
        }
        acceptor.get();
      });
    } catch (...) {
      failure = std::current_exception();
    }
    for (auto& t : clients) t.join();
    r.cache_entries = st.cache.entries();
    r.evictions = st.cache.evictions();
  }  // ~runtime: waits for the last store/serve tasks
  for (auto& o : origins) {
    o->stop();  // joins its threads: every request it answered is counted
    r.origin_fetches += o->served();
  }

  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      errors.add(std::string("proxy: ") + e.what());
    }
  }
  clock::time_point first = clock::time_point::max(), last = clock::time_point::min();
  for (auto& o : outs) {
    if (!o.error.empty()) errors.add(o.error);
    r.hit_us_per_byte.insert(r.hit_us_per_byte.end(), o.hit_us_per_byte.begin(), o.hit_us_per_byte.end());
    r.miss_us_per_byte.insert(r.miss_us_per_byte.end(), o.miss_us_per_byte.begin(), o.miss_us_per_byte.end());
    r.requests += o.requests;
    r.hits += o.hits;
    r.misses += o.misses;
    r.bytes_checked += o.bytes;
    first = std::min(first, o.start);
    last = std::max(last, o.end);
  }
  for (auto& v : st.resp_us) r.resp_us.insert(r.resp_us.end(), v.begin(), v.end());
  r.stat_us_per_entry = std::move(st.stat_us_per_entry);
  r.stats_rounds = r.stat_us_per_entry.size();
  r.proxy_hits = st.hits.load(std::memory_order_relaxed);
  r.proxy_misses = st.misses.load(std::memory_order_relaxed);
  r.lock_inversions = weft::lock_inversions() - inversions_before;
  r.seconds = std::chrono::duration<double>(last - first).count();
  r.requests_per_s = r.seconds > 0 ? static_cast<double>(r.requests) / r.seconds : 0;
  // The checks on the output (the bytes were checked by the clients).
  auto check = [&](bool ok, const std::string& what) {
    if (!ok) errors.add("check failed: " + what);
  };
  const std::uint64_t asked = static_cast<std::uint64_t>(opt.clients) * opt.requests;
  check(r.requests == asked, std::to_string(r.requests) + " requests answered of " + std::to_string(asked));
  check(r.hits + r.misses == r.requests, "hits + misses (" + std::to_string(r.hits) + " + " +
        std::to_string(r.misses) + ") != requests answered (" + std::to_string(r.requests) + ")");
  check(r.proxy_hits == r.hits && r.proxy_misses == r.misses,
        "the proxy counted " + std::to_string(r.proxy_hits) + " hits and " + std::to_string(r.proxy_misses) +
        " misses, the clients saw " + std::to_string(r.hits) + " and " + std::to_string(r.misses));
  check(r.origin_fetches == r.proxy_misses, "the origins answered " + std::to_string(r.origin_fetches) +
        " requests for " + std::to_string(r.proxy_misses) + " misses");
  check(r.resp_us.size() == r.requests, std::to_string(r.resp_us.size()) + " requests read by the proxy, " +
        std::to_string(r.requests) + " answered");
  r.errors = errors.take();
  return r;
}

}  // namespace weft_app::proxy
