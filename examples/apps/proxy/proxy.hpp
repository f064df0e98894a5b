// weft example app — a caching proxy server with four priority levels
// (I-Cilk §5.2, Figure 7). See README.md in this directory.
//
// The program has three parts, all in one process, talking over loopback TCP:
//  * origin servers: plain threads (blocking sockets) that answer "GET url"
//    after a configurable latency with a page generated deterministically
//    from the URL (page_bytes / fill_page below), so anyone can check it;
//  * the proxy: tasks of a weft runtime (its own workers), at four levels,
//    from the most urgent:
//      0  the request loop: accept clients, read their requests, dispatch;
//      1  cache hit: send a cached page (also stores a fetched page in the
//         cache and sends it: the hand-off from level 2, see proxy.cpp);
//      2  cache miss: fetch the page from its origin (weft::io), check it;
//      3  cache statistics, every stats_period;
//    the cache is an LRU map bounded in bytes, behind a weft::mutex;
//  * clients: plain threads (blocking sockets, outside the runtime), each
//    sending `requests` requests one at a time, a fraction `hit_ratio` of
//    them for a small set of popular pages (cached after their first fetch)
//    and the rest for pages nobody asked for before (misses). They check every
//    byte they receive against the origin's page and time each request.
//
// run() returns the measurements and the list of errors it found (wrong
// bytes, counts that do not add up); an empty list means the output checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weft_app::proxy {

struct options {
  unsigned workers = 2;           // proxy runtime's workers
  bool oblivious = false;         // priority-oblivious scheduler (all one level)
  unsigned clients = 4;           // client threads, one connection each
  unsigned requests = 200;        // requests per client (measured)
  double hit_ratio = 0.8;         // fraction of requests for popular pages
  unsigned hot_pages = 32;        // popular pages (fetched once, then hits)
  std::size_t page_min = 2048;    // page sizes: uniform in [page_min, page_max],
  std::size_t page_max = 32768;   //   chosen by the URL
  std::size_t cache_bytes = 8u << 20;  // LRU bound on the cached bytes
  unsigned origins = 2;           // origin servers
  unsigned origin_threads = 8;    // connections each origin serves at once
  unsigned origin_latency_us = 500;  // origin's delay before answering
  unsigned think_us = 1000;       // client's think time: uniform in [0, think_us]
  unsigned stats_period_ms = 5;   // cache statistics period
  unsigned miss_work = 8;         // passes of a digest over a fetched page (CPU work of a miss)
  unsigned quantum_us = 500;      // APS quantum L
  double rho = 1.2;               // APS responsiveness (the paper's proxy: 1.2)
  std::uint64_t seed = 1;
  unsigned corrupt_every = 0;     // testing the checks: flip a byte of every Nth reply (0: never)
};

struct results {
  // Per request (client view), per stats round.
  std::vector<double> resp_us;            // request sent -> request loop has dispatched it
  std::vector<double> hit_us_per_byte;    // request sent -> last byte, / page bytes (hits)
  std::vector<double> miss_us_per_byte;   // the same for misses
  std::vector<double> stat_us_per_entry;  // one statistics round / cache entries
  std::uint64_t requests = 0;             // requests answered (clients' count)
  std::uint64_t hits = 0, misses = 0;     // as the proxy said in its replies
  std::uint64_t proxy_hits = 0, proxy_misses = 0;  // proxy's own counters
  std::uint64_t origin_fetches = 0;       // requests the origins answered
  std::uint64_t bytes_checked = 0;        // page bytes clients compared with the origin's
  std::uint64_t evictions = 0;            // pages the LRU dropped
  std::uint64_t stats_rounds = 0;
  std::uint64_t lock_inversions = 0;      // weft::lock_inversions() during the run
  std::size_t cache_entries = 0;          // at the end
  double seconds = 0;                     // clients' first request to last reply
  double requests_per_s = 0;
  std::vector<std::string> errors;        // empty: every check passed
  bool ok() const { return errors.empty(); }
};

// Runs origins, proxy and clients to completion. Throws std::system_error /
// std::runtime_error on setup failures (sockets), std::invalid_argument on
// bad options; wrong output goes to results::errors.
results run(const options& opt);

// Checks the options; returns "" or what is wrong.
std::string validate(const options& opt);

// The page an origin serves for `url`: its size and its bytes.
std::size_t page_bytes(const std::string& url, std::size_t page_min, std::size_t page_max);
void fill_page(const std::string& url, char* out, std::size_t n);

// Nearest-rank percentile (p in [0, 100]); NaN for an empty sample.
double percentile(std::vector<double> v, double p);
double mean(const std::vector<double>& v);

}  // namespace weft_app::proxy
