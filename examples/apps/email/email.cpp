// weft example app — the email client of I-Cilk §5.2 (see email.hpp).
#include "email.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <vector>

#include <weft/channel.hpp>
#include <weft/io.hpp>
#include <weft/mutex.hpp>
#include <weft/weft.hpp>

namespace weft_app::email {

using clock = std::chrono::steady_clock;

double samples::avg() const {
  if (v.empty()) return NAN;
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double samples::pct(double p) const {
  if (v.empty()) return NAN;
  std::vector<double> s = v;
  std::sort(s.begin(), s.end());
  double rank = std::ceil(p / 100.0 * static_cast<double>(s.size()));
  std::size_t i = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
  return s[std::min(i, s.size() - 1)];
}

namespace {

[[noreturn]] void sys_fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

std::uint64_t splitmix(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

const char* const vocabulary[] = {
    "meeting", "budget",  "report",   "weekly",  "review",  "project", "deadline", "update",
    "lunch",   "draft",   "invoice",  "travel",  "release", "server",  "schedule", "notes",
    "agenda",  "urgent",  "question", "results", "design",  "patch",   "holiday",  "team",
    "summary", "minutes", "offer",    "contract", "backup", "outage",  "priority", "quarter",
    "the",     "a",       "of",       "to",      "and",     "in",      "for",      "with",
    "please",  "thanks",  "attached", "see",     "below",   "regards", "tomorrow", "today"};
constexpr std::size_t vocabulary_size = sizeof vocabulary / sizeof vocabulary[0];

// --- the wire protocol (16-byte records, host byte order: loopback only) ----
enum : std::uint8_t { op_hello = 0, op_send = 1, op_sort = 2, op_print = 3 };
enum : std::uint8_t { reply_ack = 0, reply_done = 1, reply_error = 2 };

struct request_header {
  std::uint32_t id;
  std::uint8_t op;
  std::uint8_t key;    // sort: 0 subject, 1 sender, 2 newest first
  std::uint16_t user;  // hello: the client's user; send: the recipient
  std::uint32_t seed;  // send: the message's seed
  std::uint32_t len;   // send: body bytes that follow
};
static_assert(sizeof(request_header) == 16);

struct reply {
  std::uint32_t id;
  std::uint8_t kind;
  std::uint8_t op;
  std::uint16_t pad;
  std::uint64_t value;  // sort: messages in the listing; print: bytes printed
};
static_assert(sizeof(reply) == 16);

std::string subject_of(const std::string& text) {
  auto p = text.find("\nSubject: ");
  if (p == std::string::npos) return {};
  p += 10;
  auto e = text.find('\n', p);
  return text.substr(p, e == std::string::npos ? std::string::npos : e - p);
}

// --- the mailbox ------------------------------------------------------------
enum class stored { plain, compressed };

struct entry {
  std::uint64_t id;
  std::uint32_t seed;
  std::uint16_t from, to;
  std::string subject;
  std::uint32_t size;  // bytes of the message text
  stored state;
  bool busy;           // a print or compress task owns the file
};

// One user's mailbox: its directory and its index. The index lock is a plain
// std::mutex held only for a few instructions (never across I/O or any other
// suspension point): tasks of four levels use it, and a weft::mutex would
// report each cross-level wait as a priority inversion (docs/priorities.md,
// "Locks") for sections that never wait for anything.
struct mailbox {
  std::string path;
  std::mutex m;
  std::vector<entry> entries;  // appended only: an index stays valid
};

std::string file_name(const mailbox& b, std::uint64_t id, stored s) {
  return b.path + "/" + std::to_string(id) + (s == stored::plain ? ".txt" : ".z");
}

// Whole-file I/O through weft::io (the task suspends, not the worker).
void write_file(const std::string& path, const void* data, std::size_t n) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) sys_fail("open " + path);
  try {
    weft::io::write_all(fd, data, n);
  } catch (...) {
    weft::io::close(fd);
    throw;
  }
  weft::io::close(fd);
}

std::string read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) sys_fail("open " + path);
  std::string s;
  try {
    struct stat st{};
    if (::fstat(fd, &st) != 0) sys_fail("fstat " + path);
    s.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = weft::io::read_exact(fd, s.data(), s.size());
    s.resize(got);
  } catch (...) {
    weft::io::close(fd);
    throw;
  }
  weft::io::close(fd);
  return s;
}

std::string zcompress(const std::string& in, int level) {
  uLongf n = compressBound(static_cast<uLong>(in.size()));
  std::string out(n, '\0');
  int rc = compress2(reinterpret_cast<Bytef*>(out.data()), &n,
                     reinterpret_cast<const Bytef*>(in.data()), static_cast<uLong>(in.size()), level);
  if (rc != Z_OK) throw std::runtime_error("zlib compress2 failed: " + std::to_string(rc));
  out.resize(n);
  return out;
}

// Throws when the data is not a zlib stream of exactly `size` bytes.
std::string zuncompress(const std::string& in, std::size_t size) {
  std::string out(size, '\0');
  uLongf n = static_cast<uLongf>(size);
  int rc = uncompress(reinterpret_cast<Bytef*>(out.data()), &n,
                      reinterpret_cast<const Bytef*>(in.data()), static_cast<uLong>(in.size()));
  if (rc != Z_OK || n != size) throw std::runtime_error("zlib uncompress failed: " + std::to_string(rc));
  return out;
}

// --- the server (all of it runs as weft tasks) -------------------------------
struct server {
  const options& o;
  std::vector<std::unique_ptr<mailbox>> boxes;
  int devnull = -1;  // the "printer" and the listing's terminal
  std::atomic<std::uint64_t> next_id{1};
  // Counters read by the check loop to know when the run is over, and at the
  // end. Each is updated with acq_rel / read with acquire: the check loop
  // that sees `outstanding == 0` and `connections_done == clients` must also
  // see the mailbox updates those tasks made before decrementing (they are
  // also under each mailbox's lock, so this is belt and braces).
  std::atomic<std::int64_t> outstanding{0};     // send/sort/print/compress tasks not finished
  std::atomic<unsigned> connections_done{0};
  // Statistics only (read after the runtime has joined every task): relaxed.
  std::atomic<std::uint64_t> sends_received{0}, sends_stored{0}, checks{0}, compress_tasks{0};
  std::mutex m;  // errors, compress_ms: short sections, no suspension
  std::vector<std::string> errors;
  std::vector<double> compress_ms;

  explicit server(const options& opts) : o(opts) {}

  void error(std::string e) {
    std::lock_guard<std::mutex> g(m);
    if (errors.size() < 20) errors.push_back(std::move(e));
  }

  // level 1: store a received message in the recipient's mailbox.
  std::uint64_t send(unsigned from, unsigned to, std::uint32_t seed, const std::string& text) {
    mailbox& b = *boxes.at(to);
    std::uint64_t id = next_id.fetch_add(1, std::memory_order_relaxed);  // unique ids only
    write_file(file_name(b, id, stored::plain), text.data(), text.size());
    {
      std::lock_guard<std::mutex> g(b.m);
      b.entries.push_back(entry{id, seed, static_cast<std::uint16_t>(from),
                                static_cast<std::uint16_t>(to), subject_of(text),
                                static_cast<std::uint32_t>(text.size()), stored::plain, false});
    }
    sends_stored.fetch_add(1, std::memory_order_relaxed);
    return id;
  }

  // level 2: sort the user's listing by `key`, check it, "show" it.
  std::uint64_t sort(unsigned user, unsigned key) {
    struct line {
      std::uint64_t id;
      unsigned from;
      std::string subject;
      std::uint32_t size;
    };
    std::vector<line> lines;
    mailbox& b = *boxes.at(user);
    {
      std::lock_guard<std::mutex> g(b.m);
      lines.reserve(b.entries.size());
      for (const entry& e : b.entries) lines.push_back(line{e.id, e.from, e.subject, e.size});
    }
    auto less = [key](const line& x, const line& y) {
      if (key == 0) return x.subject != y.subject ? x.subject < y.subject : x.id < y.id;
      if (key == 1) return x.from != y.from ? x.from < y.from : x.id < y.id;
      return x.id > y.id;  // newest first
    };
    std::sort(lines.begin(), lines.end(), less);
    if (!std::is_sorted(lines.begin(), lines.end(), less))
      error("sort: the listing of user " + std::to_string(user) + " is not sorted");
    std::string out;
    char buf[160];
    for (const line& l : lines) {
      int n = std::snprintf(buf, sizeof buf, "%8llu  user%-4u  %6u  %.100s\n",
                            static_cast<unsigned long long>(l.id), l.from, l.size, l.subject.c_str());
      out.append(buf, static_cast<std::size_t>(std::max(n, 0)));
    }
    weft::io::write_all(devnull, out.data(), out.size());
    return lines.size();
  }

  // level 3: uncompress one of the user's messages (it stays uncompressed
  // until the next check) and print it, wrapped at 72 columns.
  std::uint64_t print(unsigned user, std::uint64_t pick) {
    mailbox& b = *boxes.at(user);
    std::size_t i = 0;
    entry e{};
    {
      std::lock_guard<std::mutex> g(b.m);
      const std::size_t n = b.entries.size();
      std::size_t k = 0;
      for (; k < n; ++k) {
        i = (pick + k) % n;
        if (!b.entries[i].busy) break;
      }
      if (k == n) return 0;  // every message is being compressed or printed
      b.entries[i].busy = true;
      e = b.entries[i];
    }
    std::string text;
    try {
      if (e.state == stored::compressed) {
        text = zuncompress(read_file(file_name(b, e.id, stored::compressed)), e.size);
        write_file(file_name(b, e.id, stored::plain), text.data(), text.size());
        if (::unlink(file_name(b, e.id, stored::compressed).c_str()) != 0) sys_fail("unlink");
      } else {
        text = read_file(file_name(b, e.id, stored::plain));
      }
    } catch (...) {
      std::lock_guard<std::mutex> g(b.m);
      b.entries[i].busy = false;
      throw;
    }
    {
      std::lock_guard<std::mutex> g(b.m);
      b.entries[i].state = stored::plain;
      b.entries[i].busy = false;
    }
    std::string out;
    out.reserve(text.size() + text.size() / 64);
    std::size_t col = 0;
    for (char c : text) {
      if (c == '\n') col = 0;
      else if (++col > 72 && c == ' ') {
        out.push_back('\n');
        col = 0;
        continue;
      }
      out.push_back(c);
    }
    weft::io::write_all(devnull, out.data(), out.size());
    return out.size();
  }

  // level 3: compress a batch of messages in parallel.
  void compress(const std::vector<std::pair<unsigned, std::size_t>>& batch, clock::time_point t0) {
    weft::task_group g;
    for (auto [user, i] : batch) {
      g.spawn([this, user = user, i = i] {
        mailbox& b = *boxes[user];
        entry e{};
        {
          std::lock_guard<std::mutex> lk(b.m);
          e = b.entries[i];
        }
        try {
          std::string z = zcompress(read_file(file_name(b, e.id, stored::plain)), o.zlib_level);
          write_file(file_name(b, e.id, stored::compressed), z.data(), z.size());
          if (::unlink(file_name(b, e.id, stored::plain).c_str()) != 0) sys_fail("unlink");
          std::lock_guard<std::mutex> lk(b.m);
          b.entries[i].state = stored::compressed;
          b.entries[i].busy = false;
        } catch (const std::exception& ex) {
          {
            std::lock_guard<std::mutex> lk(b.m);
            b.entries[i].busy = false;
          }
          error(std::string("compress: ") + ex.what());
        }
      });
    }
    g.sync();
    double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    std::lock_guard<std::mutex> lk(m);
    compress_ms.push_back(ms);
  }

  // level 4 (the root): the periodic check. Marks every uncompressed message
  // busy and hands them to one compress task of level 3.
  void check() {
    checks.fetch_add(1, std::memory_order_relaxed);
    std::vector<std::pair<unsigned, std::size_t>> batch;
    for (unsigned u = 0; u < boxes.size(); ++u) {
      mailbox& b = *boxes[u];
      std::lock_guard<std::mutex> g(b.m);
      for (std::size_t i = 0; i < b.entries.size(); ++i) {
        entry& e = b.entries[i];
        if (e.state == stored::plain && !e.busy) {
          e.busy = true;
          batch.emplace_back(u, i);
        }
      }
    }
    if (batch.empty()) return;
    compress_tasks.fetch_add(1, std::memory_order_relaxed);
    outstanding.fetch_add(1, std::memory_order_acq_rel);
    auto t0 = clock::now();
    // Not waited for: the check goes on with its period (the future is dropped;
    // `outstanding` tells the root when it is done).
    (void)weft::async(weft::priority(level_print_compress), [this, batch = std::move(batch), t0] {
      try {
        compress(batch, t0);
      } catch (const std::exception& ex) {
        error(std::string("compress task: ") + ex.what());
      }
      outstanding.fetch_sub(1, std::memory_order_acq_rel);
    });
  }

  // level 0: one client connection. This task reads requests and spawns
  // their work; a writer task of level 0 sends the completions that the work
  // tasks queue on the connection's channel. Both write the socket under the
  // connection's weft::mutex (held by level-0 tasks only: no inversion).
  struct connection {
    int fd;
    unsigned user = 0;
    weft::mutex write_lock;
    weft::channel<reply> completions{weft::unbounded};
    // 1 for the reader + 1 per work task not finished; whoever brings it to 0
    // closes the channel, which ends the writer. acq_rel: the closing task
    // sees every completion queued before the others' decrements.
    std::atomic<std::int64_t> pending{1};
    explicit connection(int f) : fd(f) {}
    void put(const reply& r) {
      std::lock_guard<weft::mutex> g(write_lock);
      weft::io::write_all(fd, &r, sizeof r);
    }
    void finish() {
      if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) completions.close();
    }
  };

  void handle(int fd) {
    auto c = std::make_shared<connection>(fd);
    struct on_exit {
      server& s;
      int fd;
      ~on_exit() {
        std::error_code ec;
        weft::io::close(fd, ec);
        s.connections_done.fetch_add(1, std::memory_order_acq_rel);
      }
    } done{*this, fd};
    auto writer = weft::async(weft::priority(level_requests), [c] {
      while (auto r = c->completions.recv()) c->put(*r);
    });
    std::exception_ptr failure;
    try {
      request_header h{};
      if (weft::io::read_exact(fd, &h, sizeof h) != sizeof h || h.op != op_hello || h.user >= boxes.size())
        throw std::runtime_error("email: a client did not say hello");
      c->user = h.user;
      std::uint64_t pick = (o.seed << 20) ^ (static_cast<std::uint64_t>(h.user) << 8);
      while (weft::io::read_exact(fd, &h, sizeof h) == sizeof h) {
        std::string body;
        if (h.op == op_send) {
          if (h.user >= boxes.size() || h.len > (1u << 20)) throw std::runtime_error("email: bad send request");
          body.resize(h.len);
          if (weft::io::read_exact(fd, body.data(), body.size()) != body.size())
            throw std::runtime_error("email: connection closed inside a message");
          sends_received.fetch_add(1, std::memory_order_relaxed);
        } else if (h.op != op_sort && h.op != op_print) {
          throw std::runtime_error("email: unknown request " + std::to_string(h.op));
        }
        unsigned level = h.op == op_send ? level_send : h.op == op_sort ? level_sort : level_print_compress;
        c->pending.fetch_add(1, std::memory_order_relaxed);  // the reader still holds its own 1
        outstanding.fetch_add(1, std::memory_order_acq_rel);
        std::uint64_t p = splitmix(pick);
        (void)weft::async(weft::priority(level), [this, c, h, p, body = std::move(body)] {
          reply r{h.id, reply_done, h.op, 0, 0};
          try {
            if (h.op == op_send) r.value = send(c->user, h.user, h.seed, body);
            else if (h.op == op_sort) r.value = sort(c->user, h.key);
            else r.value = print(c->user, p);
          } catch (const std::exception& ex) {
            r.kind = reply_error;
            error(std::string("request: ") + ex.what());
          }
          c->completions.send(r);  // unbounded: never waits
          c->finish();
          outstanding.fetch_sub(1, std::memory_order_acq_rel);
        });
        c->put(reply{h.id, reply_ack, h.op, 0, 0});  // resp: the work exists
      }
    } catch (...) {
      failure = std::current_exception();
    }
    c->finish();
    writer.get();
    if (failure) std::rethrow_exception(failure);
  }

  void accept_all(int lfd) {
    std::vector<weft::future<void>> handlers;
    for (unsigned i = 0; i < o.clients; ++i) {
      // A client that never connects (it failed first) ends the run with
      // an error (timed_out) instead of hanging it.
      int fd = weft::io::accept(lfd).get_for(std::chrono::seconds(30));
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      handlers.push_back(weft::async(weft::priority(level_requests), [this, fd] { handle(fd); }));
    }
    std::exception_ptr first;
    for (auto& h : handlers) {
      try {
        h.get();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
  }

  // After the run: every index entry has its one file, with the original bytes.
  void verify(results& res) {
    for (unsigned u = 0; u < boxes.size(); ++u) {
      mailbox& b = *boxes[u];
      std::set<std::string> names;
      if (DIR* d = ::opendir(b.path.c_str())) {
        while (dirent* de = ::readdir(d))
          if (std::strcmp(de->d_name, ".") != 0 && std::strcmp(de->d_name, "..") != 0) names.insert(de->d_name);
        ::closedir(d);
      } else {
        error("verify: cannot list " + b.path);
        continue;
      }
      std::vector<entry> entries;
      {
        // A copy: the reads below suspend, and a std::mutex must not be held
        // across a suspension (the task may resume on another thread).
        std::lock_guard<std::mutex> g(b.m);
        entries = b.entries;
      }
      for (const entry& e : entries) {
        ++res.messages;
        if (e.state == stored::compressed) ++res.compressed;
        std::string name = std::to_string(e.id) + (e.state == stored::plain ? ".txt" : ".z");
        if (e.busy) error("verify: message " + name + " still busy");
        if (!names.erase(name)) {
          error("verify: message " + b.path + "/" + name + " is missing");
          continue;
        }
        std::string expect = message_text(e.seed, e.from, e.to);
        try {
          std::string got = read_file(b.path + "/" + name);
          if (e.state == stored::compressed) got = zuncompress(got, e.size);
          if (got != expect) error("verify: " + b.path + "/" + name + " differs from the message sent");
        } catch (const std::exception& ex) {
          error("verify: " + b.path + "/" + name + ": " + ex.what());
        }
      }
      for (const auto& n : names) error("verify: stray file " + b.path + "/" + n);
    }
  }
};

// --- the clients (plain threads, blocking sockets, outside the runtime) -----
struct client_out {
  std::vector<double> resp, send, sort, print;
  std::uint64_t requests = 0, sends_done = 0;
  std::string error;
  std::chrono::steady_clock::time_point end{};  // when its last completion arrived
};

void send_all(int fd, const void* p, std::size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t k = ::send(fd, c, n, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      sys_fail("client send");
    }
    c += k;
    n -= static_cast<std::size_t>(k);
  }
}

class client {
 public:
  client(const options& o, unsigned user, int port, client_out& out) : o_(o), user_(user), out_(out) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) sys_fail("client socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd_);
      sys_fail("client connect");
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~client() { ::close(fd_); }

  void run() {
    request_header hello{0, op_hello, 0, static_cast<std::uint16_t>(user_), 0, 0};
    send_all(fd_, &hello, sizeof hello);
    std::mt19937_64 g(o_.seed * 1000003 + user_);
    std::exponential_distribution<double> think(o_.think_us > 0 ? 1.0 / o_.think_us : 1.0);
    std::uniform_int_distribution<unsigned> pct(0, 99), to(0, o_.clients - 1), key(0, 2);
    std::uniform_int_distribution<std::uint32_t> seed;
    const unsigned total = o_.warmup + o_.requests;
    for (unsigned i = 0; i < total; ++i) {
      if (o_.think_us > 0) {
        auto until = clock::now() + std::chrono::microseconds(static_cast<long>(think(g)));
        while (pump(until)) {
        }
      }
      while (open_ >= o_.window) pump(clock::time_point::max());
      unsigned r = pct(g);
      request_header h{i + 1, op_print, 0, 0, 0, 0};
      std::string body;
      if (r < o_.send_pct) {
        h.op = op_send;
        h.user = static_cast<std::uint16_t>(to(g));
        h.seed = seed(g);
        body = message_text(h.seed, user_, h.user);
        h.len = static_cast<std::uint32_t>(body.size());
      } else if (r < o_.send_pct + o_.sort_pct) {
        h.op = op_sort;
        h.key = static_cast<std::uint8_t>(key(g));
      }
      auto& st = pending_[h.id];
      st = state{h.op, i >= o_.warmup, false, false, clock::now()};
      ++open_;
      send_all(fd_, &h, sizeof h);
      if (!body.empty()) send_all(fd_, body.data(), body.size());
      current_ = h.id;
      acked_current_ = false;
      while (!acked_current_) pump(clock::time_point::max());
    }
    while (open_ > 0) pump(clock::time_point::max());
    out_.end = clock::now();
    ::shutdown(fd_, SHUT_WR);
    // The server closes once every completion is written: nothing more may come.
    char b[64];
    for (;;) {
      ssize_t k = ::recv(fd_, b, sizeof b, 0);
      if (k == 0) break;
      if (k < 0 && errno == EINTR) continue;
      if (k < 0) sys_fail("client recv");
      throw std::runtime_error("unexpected data after the last completion");
    }
    if (!pending_.empty()) throw std::runtime_error("requests never acknowledged");
  }

 private:
  struct state {
    std::uint8_t op;
    bool measured, acked, done;
    clock::time_point t0;
  };

  // Reads what arrives before `until`; false once `until` has passed.
  bool pump(clock::time_point until) {
    timespec ts{}, *tsp = nullptr;
    if (until != clock::time_point::max()) {
      auto left = until - clock::now();
      if (left <= clock::duration::zero()) return false;
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      ts.tv_sec = ns / 1000000000;
      ts.tv_nsec = ns % 1000000000;
      tsp = &ts;
    }
    pollfd p{fd_, POLLIN, 0};
    int n = ::ppoll(&p, 1, tsp, nullptr);
    if (n < 0) {
      if (errno == EINTR) return true;
      sys_fail("client ppoll");
    }
    if (n == 0) return false;
    ssize_t k = ::recv(fd_, buf_ + fill_, sizeof buf_ - fill_, 0);
    if (k < 0) {
      if (errno == EINTR) return true;
      sys_fail("client recv");
    }
    if (k == 0) throw std::runtime_error("the server closed the connection");
    const auto now = clock::now();
    fill_ += static_cast<std::size_t>(k);
    std::size_t at = 0;
    for (; fill_ - at >= sizeof(reply); at += sizeof(reply)) {
      reply r;
      std::memcpy(&r, buf_ + at, sizeof r);
      handle(r, now);
    }
    std::memmove(buf_, buf_ + at, fill_ - at);
    fill_ -= at;
    return true;
  }

  void handle(const reply& r, clock::time_point now) {
    auto it = pending_.find(r.id);
    if (it == pending_.end()) throw std::runtime_error("reply for an unknown request");
    state& s = it->second;
    if (s.op != r.op) throw std::runtime_error("reply of the wrong kind");
    if (r.kind == reply_error) throw std::runtime_error("the server failed a request (see its errors)");
    double us = std::chrono::duration<double, std::micro>(now - s.t0).count();
    if (r.kind == reply_ack) {
      if (s.acked) throw std::runtime_error("two acknowledgements");
      s.acked = true;
      if (s.measured) out_.resp.push_back(us);
      if (r.id == current_) acked_current_ = true;
    } else {
      if (s.done) throw std::runtime_error("two completions");
      s.done = true;
      --open_;
      if (s.op == op_send) ++out_.sends_done;
      if (s.measured) {
        ++out_.requests;
        if (s.op == op_send) out_.send.push_back(us);
        else if (s.op == op_sort) out_.sort.push_back(us / static_cast<double>(std::max<std::uint64_t>(r.value, 1)));
        else out_.print.push_back(us / 1000.0);
      }
    }
    if (s.acked && s.done) pending_.erase(it);
  }

  const options& o_;
  unsigned user_;
  client_out& out_;
  int fd_ = -1;
  std::unordered_map<std::uint32_t, state> pending_;
  unsigned open_ = 0;  // requests sent and not completed
  std::uint32_t current_ = 0;
  bool acked_current_ = false;
  char buf_[4096];
  std::size_t fill_ = 0;
};

void validate(const options& o) {
  auto bad = [](const std::string& m) { throw std::invalid_argument(m); };
  if (o.clients < 1 || o.clients > 1000) bad("clients must be 1..1000");
  if (o.requests < 1) bad("requests must be >= 1");
  if (o.workers < 1 || o.workers > 256) bad("workers must be 1..256");
  if (o.window < 1) bad("window must be >= 1");
  if (o.send_pct + o.sort_pct > 100) bad("send% + sort% must be <= 100");
  if (o.check_ms < 1) bad("check period must be >= 1 ms");
  if (o.zlib_level < 1 || o.zlib_level > 9) bad("zlib level must be 1..9");
  if (o.think_us > 10'000'000) bad("think time must be <= 10 s");
}

}  // namespace

std::string message_text(std::uint64_t seed, unsigned from, unsigned to) {
  std::uint64_t x = seed * 0x2545f4914f6cdd1dULL + 17;
  std::size_t size = 2048 + splitmix(x) % (14 * 1024);
  std::string s = "From: user" + std::to_string(from) + "\nTo: user" + std::to_string(to) + "\nSubject:";
  unsigned words = 2 + static_cast<unsigned>(splitmix(x) % 5);
  for (unsigned i = 0; i < words; ++i) {
    s += ' ';
    s += vocabulary[splitmix(x) % 32];  // the nouns
  }
  s += "\n\n";
  unsigned in_line = 0;
  while (s.size() < size) {
    s += vocabulary[splitmix(x) % vocabulary_size];
    if (++in_line == 12) {
      s += ".\n";
      in_line = 0;
    } else {
      s += ' ';
    }
  }
  s.resize(size);
  s += '\n';
  return s;
}

results run(const options& o) {
  validate(o);
  results res;

  // The mailbox directory, removed at the end (unless keep).
  std::string parent = o.dir_parent;
  if (parent.empty()) {
    const char* t = std::getenv("TMPDIR");
    parent = t && *t ? t : "/tmp";
  }
  std::string tmpl = parent + "/weft-email-XXXXXX";
  if (!::mkdtemp(tmpl.data())) sys_fail("mkdtemp in " + parent);
  res.dir = tmpl;
  struct remover {
    const std::string& dir;
    bool keep;
    ~remover() {
      std::error_code ec;
      if (!keep) std::filesystem::remove_all(dir, ec);
    }
  } remove_dir{res.dir, o.keep};

  server srv(o);
  srv.devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (srv.devnull < 0) sys_fail("open /dev/null");
  struct fd_closer {
    int fd;
    ~fd_closer() { ::close(fd); }
  } close_devnull{srv.devnull};

  // Prefill (not timed): `prefill` compressed messages per mailbox.
  std::uint64_t x = o.seed;
  for (unsigned u = 0; u < o.clients; ++u) {
    auto b = std::make_unique<mailbox>();
    b->path = res.dir + "/user" + std::to_string(u);
    if (::mkdir(b->path.c_str(), 0755) != 0) sys_fail("mkdir " + b->path);
    for (unsigned k = 0; k < o.prefill; ++k) {
      std::uint32_t seed = static_cast<std::uint32_t>(splitmix(x));
      unsigned from = static_cast<unsigned>(splitmix(x) % o.clients);
      std::string text = message_text(seed, from, u);
      std::string z = zcompress(text, o.zlib_level);
      std::uint64_t id = srv.next_id.fetch_add(1, std::memory_order_relaxed);
      std::string name = file_name(*b, id, stored::compressed);
      int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) sys_fail("open " + name);
      bool ok = ::write(fd, z.data(), z.size()) == static_cast<ssize_t>(z.size());
      ::close(fd);
      if (!ok) sys_fail("write " + name);
      b->entries.push_back(entry{id, seed, static_cast<std::uint16_t>(from), static_cast<std::uint16_t>(u),
                                 subject_of(text), static_cast<std::uint32_t>(text.size()),
                                 stored::compressed, false});
    }
    srv.boxes.push_back(std::move(b));
  }

  // The listening socket (the server accepts with weft::io::accept).
  int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) sys_fail("socket");
  fd_closer close_listener{lfd};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) sys_fail("bind");
  if (::listen(lfd, static_cast<int>(o.clients) + 8) != 0) sys_fail("listen");
  if (::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) != 0) sys_fail("getsockname");
  const int port = ntohs(a.sin_port);

  weft::options wo;
  wo.workers = o.workers;
  wo.priorities = o.oblivious ? weft::options::priority_mode::oblivious : weft::options::priority_mode::adaptive;
  weft::runtime rt(wo);

  // The clients connect now (the backlog holds them until accepted).
  std::vector<client_out> outs(o.clients);
  std::vector<std::thread> threads;
  const auto t0 = clock::now();
  for (unsigned u = 0; u < o.clients; ++u) {
    threads.emplace_back([&o, u, port, &outs] {
      try {
        client c(o, u, port, outs[u]);
        c.run();
      } catch (const std::exception& e) {
        outs[u].error = e.what();
      }
    });
  }
  std::exception_ptr failure;
  try {
    // The root is the periodic check (level 4). It spawns the request loop
    // (level 0) first: once more urgent work exists it runs only when the
    // levels above leave it a worker, as the paper's check does.
    rt.run(weft::priority(level_check), [&] {
      auto requests = weft::async(weft::priority(level_requests), [&] { srv.accept_all(lfd); });
      bool requests_ended = false;
      for (;;) {
        weft::io::sleep_for(std::chrono::milliseconds(o.check_ms)).get();
        if (srv.connections_done.load(std::memory_order_acquire) == o.clients &&
            srv.outstanding.load(std::memory_order_acquire) == 0)
          break;
        // If the request loop has ended, get() rethrows its failure (a client
        // that never connected: accept timed out), which ends the run instead
        // of checking on forever; after a normal end the loop above breaks
        // once the last requests are done.
        if (!requests_ended && requests.is_ready()) {
          requests.get();
          requests_ended = true;
        }
        srv.check();
      }
      if (!requests_ended) requests.get();
      srv.verify(res);
    });
  } catch (...) {
    failure = std::current_exception();
  }
  // On a server failure the connections are closed, so the clients end.
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
  // The measured part: until the last client saw its last completion (not
  // the verification that follows).
  clock::time_point last = t0;
  for (const client_out& c : outs) last = std::max(last, c.end);
  res.seconds = std::chrono::duration<double>(last - t0).count();

  std::uint64_t sends_done = 0, all_requests = 0;
  for (unsigned u = 0; u < o.clients; ++u) {
    client_out& c = outs[u];
    if (!c.error.empty()) srv.error("client " + std::to_string(u) + ": " + c.error);
    res.resp.v.insert(res.resp.v.end(), c.resp.begin(), c.resp.end());
    res.send.v.insert(res.send.v.end(), c.send.begin(), c.send.end());
    res.sort.v.insert(res.sort.v.end(), c.sort.begin(), c.sort.end());
    res.print.v.insert(res.print.v.end(), c.print.begin(), c.print.end());
    res.requests += c.requests;
    sends_done += c.sends_done;
  }
  all_requests = static_cast<std::uint64_t>(o.clients) * (o.warmup + o.requests);
  res.throughput = res.seconds > 0 ? static_cast<double>(all_requests) / res.seconds : 0;
  const std::uint64_t received = srv.sends_received.load(std::memory_order_relaxed);
  const std::uint64_t stored_n = srv.sends_stored.load(std::memory_order_relaxed);
  if (received != stored_n || stored_n != sends_done)
    srv.error("verify: " + std::to_string(sends_done) + " sends completed for the clients, " +
              std::to_string(received) + " received, " + std::to_string(stored_n) + " stored");
  if (res.messages != static_cast<std::uint64_t>(o.clients) * o.prefill + stored_n)
    srv.error("verify: " + std::to_string(res.messages) + " messages in the mailboxes, expected " +
              std::to_string(static_cast<std::uint64_t>(o.clients) * o.prefill + stored_n));
  if (res.requests != static_cast<std::uint64_t>(o.clients) * o.requests)
    srv.error("verify: " + std::to_string(res.requests) + " measured requests completed, expected " +
              std::to_string(static_cast<std::uint64_t>(o.clients) * o.requests));
  res.compress.v = srv.compress_ms;
  res.checks = srv.checks.load(std::memory_order_relaxed);
  res.compress_tasks = srv.compress_tasks.load(std::memory_order_relaxed);
  res.errors = srv.errors;
  res.ok = res.errors.empty();
  return res;
}

}  // namespace weft_app::email
