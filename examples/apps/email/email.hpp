// weft example app — the email client of I-Cilk (paper 001) §5.2, Figure 6.
//
// A multi-user email server written as weft tasks at five priority levels
// (0 is the most urgent), as the paper's benchmark:
//   0  the loop handling user requests (accept, one reader and one writer
//      task per client connection)
//   1  send: store a message in the recipient's mailbox
//   2  sort: sort a user's mailbox listing
//   3  compress, and uncompress-and-print (equal level)
//   4  the periodic check that finds uncompressed messages and triggers a
//      compress task
// Messages are real files in a mailbox directory (mkdtemp, removed at the
// end), compressed with zlib. Users are client threads (outside the runtime)
// on loopback TCP that send request mixes and time them. At the end the
// program checks the mailbox state (every sent message stored, every file
// decompresses to the original bytes, every sorted listing was sorted).
//
// run() is the whole program; main.cpp parses options and prints results,
// and weft-bench's `email` section (bench/email.cpp) calls run() too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weft_app::email {

// The five levels (weft::priority numbers; 0 is the most urgent).
inline constexpr unsigned level_requests = 0;
inline constexpr unsigned level_send = 1;
inline constexpr unsigned level_sort = 2;
inline constexpr unsigned level_print_compress = 3;
inline constexpr unsigned level_check = 4;

struct options {
  unsigned clients = 4;          // users, one TCP connection each
  unsigned requests = 100;       // requests per client (after `warmup`)
  unsigned warmup = 5;           // per client, not measured
  unsigned workers = 2;          // weft workers
  bool oblivious = false;        // priority-oblivious scheduler (one level)
  unsigned think_us = 1000;      // mean think time between requests (exponential)
  unsigned window = 4;           // requests a client may have outstanding (not completed)
  unsigned send_pct = 40;        // request mix, percent (the rest: print)
  unsigned sort_pct = 20;
  unsigned prefill = 30;         // compressed messages per mailbox at the start
  unsigned check_ms = 10;        // period of the compression check
  int zlib_level = 6;
  std::uint64_t seed = 1;
  std::string dir_parent;        // where the mailbox directory is made ("" : $TMPDIR or /tmp)
  bool keep = false;             // keep the mailbox directory (for inspection)
};

// One kind of measured time: every sample, in the kind's unit.
struct samples {
  std::vector<double> v;
  double avg() const;
  double pct(double p) const;  // nearest rank, p in [0, 100]; NaN when empty
};

struct results {
  samples resp;      // us: request sent -> acknowledgement (task created) received
  samples send;      // us: request sent -> message stored
  samples sort;      // us per message in the listing: request sent -> listing sorted
  samples print;     // ms: request sent -> message uncompressed and printed
  samples compress;  // ms: check triggers a compress task -> task done (server side)
  std::uint64_t requests = 0;       // measured requests completed (all clients)
  double seconds = 0;               // clients start -> last completion received
  double throughput = 0;            // requests / s (all requests, warm-up included)
  std::uint64_t messages = 0;       // messages in all mailboxes at the end
  std::uint64_t compressed = 0;     // of which compressed
  std::uint64_t checks = 0;         // periodic checks that ran
  std::uint64_t compress_tasks = 0; // compress tasks they triggered
  std::string dir;                  // the mailbox directory (removed unless keep)
  bool ok = false;                  // the mailbox verified
  std::vector<std::string> errors;  // why not ok
};

// Runs one session. Throws std::invalid_argument on bad options and
// std::system_error / std::runtime_error on a system failure; a wrong
// mailbox state is reported in results (ok == false, errors).
results run(const options& o);

// The text of message `seed` (headers + body, 2-16 KiB), as clients send it.
std::string message_text(std::uint64_t seed, unsigned from, unsigned to);

}  // namespace weft_app::email
