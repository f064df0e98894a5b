// proxy_server — a caching proxy with four priority levels on weft (I-Cilk
// §5.2, Figure 7). The logic is in proxy.cpp; this file parses options and
// prints the results. `proxy_server --help` lists the options.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "proxy.hpp"

namespace {

using weft_app::proxy::options;

void usage(FILE* out) {
  const options d;
  std::fprintf(out,
      "usage: proxy_server [options]\n"
      "A caching proxy server on weft with four priority levels (I-Cilk, section 5.2,\n"
      "Figure 7): 0 request loop, 1 cache hit, 2 cache miss (fetched from origin\n"
      "servers), 3 cache statistics. Origin servers, the proxy and its clients run in\n"
      "this process and talk over loopback TCP; clients check every byte they receive\n"
      "against the origin's page. Exit status: 0 if every check passed, 1 if not, 2 on\n"
      "bad options.\n"
      "options:\n"
      "  --workers N          proxy runtime's workers (default %u)\n"
      "  --oblivious          priority-oblivious scheduler (every task at one level)\n"
      "                       instead of APS\n"
      "  --clients N          client threads, one connection each (default %u)\n"
      "  --requests N         requests per client (default %u)\n"
      "  --hit-ratio R        fraction of requests for popular pages, 0..1 (default %.2f)\n"
      "  --hot-pages N        popular pages (default %u)\n"
      "  --page-min BYTES     smallest page (default %zu)\n"
      "  --page-max BYTES     largest page (default %zu); a page's size is chosen by its URL\n"
      "  --cache-bytes BYTES  LRU cache bound (default %zu)\n"
      "  --origins N          origin servers (default %u)\n"
      "  --origin-threads N   connections each origin serves at once (default %u)\n"
      "  --latency-us N       origin's delay before answering, us (default %u)\n"
      "  --think-us N         client's think time between requests: uniform 0..N us\n"
      "                       (default %u)\n"
      "  --stats-ms N         cache statistics period, ms (default %u)\n"
      "  --miss-work N        passes of a digest over each fetched page: the CPU work of\n"
      "                       a miss (default %u)\n"
      "  --quantum-us N       APS quantum L, us (default %u)\n"
      "  --rho R              APS responsiveness rho (default %.1f, the paper's for proxy)\n"
      "  --seed N             clients' random seed (default %llu)\n"
      "  --corrupt-every N    testing the checks: the proxy flips one byte of every Nth\n"
      "                       reply (default 0: never); the run must then fail\n"
      "  --json               print the results as one JSON object\n"
      "  -h, --help           this text\n",
      d.workers, d.clients, d.requests, d.hit_ratio, d.hot_pages, d.page_min, d.page_max,
      d.cache_bytes, d.origins, d.origin_threads, d.origin_latency_us, d.think_us,
      d.stats_period_ms, d.miss_work, d.quantum_us, d.rho,
      static_cast<unsigned long long>(d.seed));
}

[[noreturn]] void bad(const std::string& msg) {
  std::fprintf(stderr, "proxy_server: %s (see --help)\n", msg.c_str());
  std::exit(2);
}

unsigned long long parse_uint(const char* opt, const char* s) {
  if (!s) bad(std::string(opt) + " needs a value");
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || end == s || *end || s[0] == '-') bad(std::string(opt) + ": not a non-negative integer: '" + s + "'");
  return v;
}
unsigned parse_u32(const char* opt, const char* s) {
  unsigned long long v = parse_uint(opt, s);
  if (v > 0xffffffffull) bad(std::string(opt) + ": too large: " + s);
  return static_cast<unsigned>(v);
}
double parse_double(const char* opt, const char* s) {
  if (!s) bad(std::string(opt) + " needs a value");
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (errno || end == s || *end) bad(std::string(opt) + ": not a number: '" + s + "'");
  return v;
}

struct stat5 {
  double avg, p50, p95, p99;
  std::size_t n;
};
stat5 summarize(const std::vector<double>& v) {
  using namespace weft_app::proxy;
  return {mean(v), percentile(v, 50), percentile(v, 95), percentile(v, 99), v.size()};
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    auto take = [&] { ++i; return v; };
    if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--oblivious") {
      o.oblivious = true;
    } else if (a == "--workers") {
      o.workers = parse_u32("--workers", take());
    } else if (a == "--clients") {
      o.clients = parse_u32("--clients", take());
    } else if (a == "--requests") {
      o.requests = parse_u32("--requests", take());
    } else if (a == "--hit-ratio") {
      o.hit_ratio = parse_double("--hit-ratio", take());
    } else if (a == "--hot-pages") {
      o.hot_pages = parse_u32("--hot-pages", take());
    } else if (a == "--page-min") {
      o.page_min = parse_uint("--page-min", take());
    } else if (a == "--page-max") {
      o.page_max = parse_uint("--page-max", take());
    } else if (a == "--cache-bytes") {
      o.cache_bytes = parse_uint("--cache-bytes", take());
    } else if (a == "--origins") {
      o.origins = parse_u32("--origins", take());
    } else if (a == "--origin-threads") {
      o.origin_threads = parse_u32("--origin-threads", take());
    } else if (a == "--latency-us") {
      o.origin_latency_us = parse_u32("--latency-us", take());
    } else if (a == "--think-us") {
      o.think_us = parse_u32("--think-us", take());
    } else if (a == "--stats-ms") {
      o.stats_period_ms = parse_u32("--stats-ms", take());
    } else if (a == "--miss-work") {
      o.miss_work = parse_u32("--miss-work", take());
    } else if (a == "--quantum-us") {
      o.quantum_us = parse_u32("--quantum-us", take());
    } else if (a == "--rho") {
      o.rho = parse_double("--rho", take());
    } else if (a == "--corrupt-every") {
      o.corrupt_every = parse_u32("--corrupt-every", take());
    } else if (a == "--seed") {
      o.seed = parse_uint("--seed", take());
    } else {
      bad("unknown option '" + a + "'");
    }
  }
  if (std::string why = weft_app::proxy::validate(o); !why.empty()) bad(why);

  weft_app::proxy::results r;
  try {
    r = weft_app::proxy::run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "proxy_server: %s\n", e.what());
    return 1;
  }
  const char* names[4] = {"resp", "hit", "miss", "stat"};
  const char* units[4] = {"us", "us/byte", "us/byte", "us/entry"};
  const std::vector<double>* series[4] = {&r.resp_us, &r.hit_us_per_byte, &r.miss_us_per_byte,
                                          &r.stat_us_per_entry};
  if (json) {
    std::printf("{\"scheduler\":\"%s\",\"workers\":%u,\"clients\":%u,\"requests\":%llu,\"hits\":%llu,"
                "\"misses\":%llu,\"bytes_checked\":%llu,\"evictions\":%llu,\"stats_rounds\":%llu,"
                "\"lock_inversions\":%llu,\"seconds\":%.4f,\"requests_per_s\":%.1f,\"ok\":%s",
                o.oblivious ? "oblivious" : "APS", o.workers, o.clients,
                static_cast<unsigned long long>(r.requests), static_cast<unsigned long long>(r.hits),
                static_cast<unsigned long long>(r.misses), static_cast<unsigned long long>(r.bytes_checked),
                static_cast<unsigned long long>(r.evictions), static_cast<unsigned long long>(r.stats_rounds),
                static_cast<unsigned long long>(r.lock_inversions), r.seconds, r.requests_per_s,
                r.ok() ? "true" : "false");
    for (int k = 0; k < 4; ++k) {
      stat5 s = summarize(*series[k]);
      auto num = [](double x) { return std::isnan(x) ? std::string("null") : std::to_string(x); };
      std::printf(",\"%s\":{\"unit\":\"%s\",\"n\":%zu,\"avg\":%s,\"p50\":%s,\"p95\":%s,\"p99\":%s}", names[k],
                  units[k], s.n, num(s.avg).c_str(), num(s.p50).c_str(), num(s.p95).c_str(), num(s.p99).c_str());
    }
    std::printf(",\"errors\":[");
    for (std::size_t i = 0; i < r.errors.size(); ++i) {
      std::string e;
      for (char c : r.errors[i]) {
        if (c == '"' || c == '\\') e.push_back('\\');
        if (static_cast<unsigned char>(c) >= 0x20) e.push_back(c);
      }
      std::printf("%s\"%s\"", i ? "," : "", e.c_str());
    }
    std::printf("]}\n");
  } else {
    std::printf("proxy_server: %s, %u worker%s, %u clients x %u requests, hit ratio %.2f, origin latency %u us\n",
                o.oblivious ? "priority-oblivious" : "APS", o.workers, o.workers == 1 ? "" : "s", o.clients,
                o.requests, o.hit_ratio, o.origin_latency_us);
    std::printf("  %-5s %-9s %8s %10s %10s %10s %10s\n", "what", "unit", "n", "avg", "p50", "p95", "p99");
    for (int k = 0; k < 4; ++k) {
      stat5 s = summarize(*series[k]);
      std::printf("  %-5s %-9s %8zu %10.3f %10.3f %10.3f %10.3f\n", names[k], units[k], s.n, s.avg, s.p50,
                  s.p95, s.p99);
    }
    std::printf("  requests %llu (hits %llu, misses %llu), %.0f requests/s over %.3f s\n",
                static_cast<unsigned long long>(r.requests), static_cast<unsigned long long>(r.hits),
                static_cast<unsigned long long>(r.misses), r.requests_per_s, r.seconds);
    std::printf("  origin fetches %llu, cache %zu entries at the end, %llu evictions, %llu statistics rounds\n",
                static_cast<unsigned long long>(r.origin_fetches), r.cache_entries,
                static_cast<unsigned long long>(r.evictions), static_cast<unsigned long long>(r.stats_rounds));
    std::printf("  %llu page bytes checked against the origins' pages; %llu lock inversions (level-1 tasks\n"
                "  waiting for the cache lock held by the statistics task)\n",
                static_cast<unsigned long long>(r.bytes_checked),
                static_cast<unsigned long long>(r.lock_inversions));
    if (r.ok()) std::printf("  OK: every byte matched the origin's page, the counts add up\n");
  }
  for (const auto& e : r.errors) std::fprintf(stderr, "proxy_server: ERROR: %s\n", e.c_str());
  return r.ok() ? 0 : 1;
}
