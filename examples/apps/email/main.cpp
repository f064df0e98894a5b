// email_client — the email client of I-Cilk §5.2 (Figure 6) on weft.
// Usage: email_client --help
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "email.hpp"

namespace {

const char* const usage =
    "usage: email_client [options]\n"
    "\n"
    "A multi-user email server as weft tasks at five priority levels (I-Cilk\n"
    "paper, section 5.2, Figure 6), most urgent first: 0 the request loop,\n"
    "1 send, 2 sort, 3 compress and uncompress-and-print, 4 the periodic check\n"
    "that triggers compression. Messages are files in a temporary mailbox\n"
    "directory, compressed with zlib. Each user is a client thread on a loopback\n"
    "TCP connection sending a random mix of send/sort/print requests with an\n"
    "exponential think time, and timing them. At the end the mailbox is checked\n"
    "(every message stored, decompressing to the bytes sent; listings sorted);\n"
    "the exit status is 1 if it is wrong, 2 on bad options.\n"
    "\n"
    "options:\n"
    "  --clients N      users (connections) (default 4)\n"
    "  --requests N     measured requests per client (default 100)\n"
    "  --warmup N       unmeasured requests per client before them (default 5)\n"
    "  --workers N      weft workers (default 2)\n"
    "  --scheduler S    aps (priorities, the default), oblivious (every task at one\n"
    "                   level), or both (one run each, side by side)\n"
    "  --think-us N     mean think time between a client's requests, us (default 1000)\n"
    "  --window N       requests a client may have sent and not seen completed\n"
    "                   (default 4)\n"
    "  --send-pct N     percent of requests that send a message (default 40)\n"
    "  --sort-pct N     percent that sort the mailbox listing (default 20); the\n"
    "                   rest uncompress and print a message\n"
    "  --prefill N      compressed messages in each mailbox at the start (default 30)\n"
    "  --check-ms N     period of the compression check, ms (default 10)\n"
    "  --zlib-level N   1..9 (default 6)\n"
    "  --seed N         random seed (default 1)\n"
    "  --dir PATH       where to make the mailbox directory (default $TMPDIR or /tmp)\n"
    "  --keep           keep the mailbox directory\n"
    "  --json           print one JSON object per run instead of the table\n"
    "  --help           this text\n"
    "\n"
    "Times, as the paper's Figure 6: resp = request sent -> acknowledgement (its\n"
    "task exists), us; send = request sent -> message stored, us; sort = request\n"
    "sent -> listing sorted, us per message listed; print = request sent ->\n"
    "message printed, ms; compress = check triggers a compress task -> task done, ms.\n";

[[noreturn]] void bad(const std::string& m) {
  std::fprintf(stderr, "email_client: %s (see --help)\n", m.c_str());
  std::exit(2);
}

unsigned long parse_num(const char* opt, const char* v, unsigned long max) {
  if (!v) bad(std::string("missing value for ") + opt);
  char* end = nullptr;
  errno = 0;
  unsigned long x = std::strtoul(v, &end, 10);
  if (!*v || *end || errno || v[0] == '-' || x > max)
    bad(std::string("bad value for ") + opt + ": '" + v + "'");
  return x;
}

void print_stats(const char* what, const char* unit, const weft_app::email::samples& s) {
  std::printf("  %-9s %-7s %10.2f %10.2f %10.2f   (%zu samples)\n", what, unit, s.avg(), s.pct(95),
              s.pct(99), s.v.size());
}

std::string json_num(double x) {
  if (std::isnan(x)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", x);
  return b;
}

void print_json(const char* sched, const weft_app::email::options& o,
                const weft_app::email::results& r) {
  std::printf("{\"scheduler\":\"%s\",\"clients\":%u,\"requests\":%u,\"workers\":%u,", sched,
              o.clients, o.requests, o.workers);
  auto st = [](const char* k, const weft_app::email::samples& s) {
    std::printf("\"%s\":{\"avg\":%s,\"p50\":%s,\"p95\":%s,\"p99\":%s,\"n\":%zu},", k,
                json_num(s.avg()).c_str(), json_num(s.pct(50)).c_str(), json_num(s.pct(95)).c_str(),
                json_num(s.pct(99)).c_str(), s.v.size());
  };
  st("resp_us", r.resp);
  st("send_us", r.send);
  st("sort_us_per_msg", r.sort);
  st("print_ms", r.print);
  st("compress_ms", r.compress);
  std::printf("\"throughput\":%s,\"seconds\":%s,\"messages\":%llu,\"compressed\":%llu,"
              "\"checks\":%llu,\"compress_tasks\":%llu,\"ok\":%s}\n",
              json_num(r.throughput).c_str(), json_num(r.seconds).c_str(),
              static_cast<unsigned long long>(r.messages), static_cast<unsigned long long>(r.compressed),
              static_cast<unsigned long long>(r.checks), static_cast<unsigned long long>(r.compress_tasks),
              r.ok ? "true" : "false");
}

}  // namespace

int main(int argc, char** argv) {
  weft_app::email::options o;
  bool json = false;
  std::string sched = "aps";
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    auto num = [&](unsigned long max) {
      ++i;
      return parse_num(a, v, max);
    };
    if (!std::strcmp(a, "--help") || !std::strcmp(a, "-h")) {
      std::fputs(usage, stdout);
      return 0;
    } else if (!std::strcmp(a, "--clients")) o.clients = static_cast<unsigned>(num(1000));
    else if (!std::strcmp(a, "--requests")) o.requests = static_cast<unsigned>(num(10'000'000));
    else if (!std::strcmp(a, "--warmup")) o.warmup = static_cast<unsigned>(num(1'000'000));
    else if (!std::strcmp(a, "--workers")) o.workers = static_cast<unsigned>(num(256));
    else if (!std::strcmp(a, "--think-us")) o.think_us = static_cast<unsigned>(num(10'000'000));
    else if (!std::strcmp(a, "--window")) o.window = static_cast<unsigned>(num(1'000'000));
    else if (!std::strcmp(a, "--send-pct")) o.send_pct = static_cast<unsigned>(num(100));
    else if (!std::strcmp(a, "--sort-pct")) o.sort_pct = static_cast<unsigned>(num(100));
    else if (!std::strcmp(a, "--prefill")) o.prefill = static_cast<unsigned>(num(100'000));
    else if (!std::strcmp(a, "--check-ms")) o.check_ms = static_cast<unsigned>(num(60'000));
    else if (!std::strcmp(a, "--zlib-level")) o.zlib_level = static_cast<int>(num(9));
    else if (!std::strcmp(a, "--seed")) o.seed = num(~0UL);
    else if (!std::strcmp(a, "--dir")) {
      if (!v) bad("missing value for --dir");
      o.dir_parent = v;
      ++i;
    } else if (!std::strcmp(a, "--scheduler")) {
      if (!v || (std::strcmp(v, "aps") && std::strcmp(v, "oblivious") && std::strcmp(v, "both")))
        bad("--scheduler takes aps, oblivious or both");
      sched = v;
      ++i;
    } else if (!std::strcmp(a, "--keep")) o.keep = true;
    else if (!std::strcmp(a, "--json")) json = true;
    else bad(std::string("unknown option '") + a + "'");
  }

  int status = 0;
  for (const char* s : {"aps", "oblivious"}) {
    if (sched != "both" && sched != s) continue;
    o.oblivious = std::strcmp(s, "oblivious") == 0;
    weft_app::email::results r;
    try {
      r = weft_app::email::run(o);
    } catch (const std::invalid_argument& e) {
      bad(e.what());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "email_client: %s\n", e.what());
      return 1;
    }
    if (json) {
      print_json(s, o, r);
    } else {
      std::printf("email client, %s scheduler: %u clients x %u requests, %u worker%s, %.2f s, "
                  "%.0f requests/s\n",
                  s, o.clients, o.requests, o.workers, o.workers == 1 ? "" : "s", r.seconds,
                  r.throughput);
      std::printf("  %-9s %-7s %10s %10s %10s\n", "", "unit", "avg", "p95", "p99");
      print_stats("resp", "us", r.resp);
      print_stats("send", "us", r.send);
      print_stats("sort", "us/msg", r.sort);
      print_stats("print", "ms", r.print);
      print_stats("compress", "ms", r.compress);
      std::printf("  mailbox: %llu messages (%llu compressed), %llu checks, %llu compress tasks%s%s\n",
                  static_cast<unsigned long long>(r.messages),
                  static_cast<unsigned long long>(r.compressed),
                  static_cast<unsigned long long>(r.checks),
                  static_cast<unsigned long long>(r.compress_tasks), o.keep ? ", kept in " : "",
                  o.keep ? r.dir.c_str() : "");
    }
    if (r.ok) {
      if (!json) std::printf("  mailbox verified: OK\n");
    } else {
      for (const auto& e : r.errors) std::fprintf(stderr, "email_client: WRONG: %s\n", e.c_str());
      status = 1;
    }
  }
  return status;
}
