// weft-bench — the `email` section: I-Cilk (paper 001) §5.2, Figure 6.
//
// Runs the email client app (examples/apps/email, weft_app_email's run()) for
// 1, 4, 10 and 30 clients at each worker count, once under APS and once under
// the priority-oblivious scheduler (the same program; every task then runs at
// one level), alternating the two in every repetition. Each row is the median
// over the repetitions of one statistic of one run (avg, p50, p95, p99 of all
// the run's samples). Units as the paper's: resp and send in us, sort in us
// per message listed, print and compress in ms. Ratio rows: APS / oblivious
// for resp p50/p95/p99 (the goal: <= 0.5) and for throughput
// (requests/s; goal: within 5%, i.e. >= 0.95).
//
// The client threads run on the same cores as the workers (the paper gave the
// clients 30 other cores), so at 1-2 workers the load is the clients' too.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "bench.hpp"

#if WEFT_BENCH_HAVE_APP_EMAIL
#include "email.hpp"

namespace weft_bench {
namespace {

namespace em = weft_app::email;

struct metric {
  const char* name;
  const char* unit;
  em::samples em::results::*field;
};
const metric metrics[] = {{"resp", "us", &em::results::resp},
                          {"send", "us", &em::results::send},
                          {"sort", "us/msg", &em::results::sort},
                          {"print", "ms", &em::results::print},
                          {"compress", "ms", &em::results::compress}};

struct stat_kind {
  const char* name;
  double p;  // < 0: the average
};
const stat_kind stats[] = {{"avg", -1}, {"p50", 50}, {"p95", 95}, {"p99", 99}};

// Figure 6, 30 users on 10 cores: {avg, 95%, 99%} per metric; Cilk-F, I-Cilk.
const double paper_cilkf[5][3] = {{486.00, 344.58, 7433.00},
                                  {501.84, 374.74, 7938.14},
                                  {2.40, 4.39, 19.33},
                                  {3.85, 34.88, 40.82},
                                  {13.45, 13.67, 40.29}};
const double paper_icilk[5][3] = {{46.91, 125.11, 500.72},
                                  {392.37, 1608.09, 4893.00},
                                  {3.38, 9.66, 30.43},
                                  {4.13, 35.59, 50.45},
                                  {127.36, 326.18, 484.74}};

}  // namespace

void run_email(const config& cfg, report& rep) {
  const unsigned client_counts[] = {1, 4, 10, 30};
  const int reps = cfg.quick ? std::min(cfg.reps, 2) : cfg.reps;
  const int warm = cfg.quick ? 0 : cfg.warmup;
  static const char* mode_name[2] = {"APS", "oblivious"};
  for (unsigned workers : cfg.workers) {
    for (unsigned clients : client_counts) {
      em::options o;
      o.clients = clients;
      o.workers = workers;
      o.requests = cfg.quick ? std::max(12u, 80u / clients) : std::max(60u, 600u / clients);
      o.warmup = 5;
      o.prefill = cfg.quick ? 10 : 30;  // setup (not timed) is most of a quick run's time
      char pbuf[128];
      std::snprintf(pbuf, sizeof pbuf, "%u clients x %u requests, %s", clients, o.requests,
                    workers_param(workers).c_str());
      const std::string p = pbuf;
      // [mode][metric][stat] -> one value per repetition
      std::vector<double> v[2][5][4], tput[2];
      std::string wrong;
      try {
        watchdog_scope wd("email: " + p, std::chrono::seconds(cfg.quick ? 120 : 600));
        for (int i = 0; i < warm + reps; ++i) {
          for (int m = 0; m < 2; ++m) {
            o.oblivious = m == 1;
            o.seed = 1 + static_cast<std::uint64_t>(i);
            em::results r = em::run(o);
            if (!r.ok && wrong.empty()) wrong = r.errors.empty() ? "?" : r.errors.front();
            if (i < warm) continue;
            for (int k = 0; k < 5; ++k) {
              const em::samples& s = r.*(metrics[k].field);
              for (int q = 0; q < 4; ++q) {
                double x = stats[q].p < 0 ? s.avg() : s.pct(stats[q].p);
                if (!std::isnan(x)) v[m][k][q].push_back(x);
              }
            }
            tput[m].push_back(r.throughput);
          }
        }
      } catch (const std::exception& e) {
        rep.add_missing("email", "run", p, std::string("error: ") + e.what(), true);
        continue;
      }
      const row* rows[2][5][4] = {};
      const row* trow[2] = {};
      for (int m = 0; m < 2; ++m) {
        for (int k = 0; k < 5; ++k) {
          for (int q = 0; q < 4; ++q) {
            std::string name = std::string(metrics[k].name) + " " + stats[q].name + ", " + mode_name[m];
            if (v[m][k][q].empty()) {
              rep.add_missing("email", name, p, "no samples (no such request in this run)");
              continue;
            }
            row r = make_row("email", name, p, v[m][k][q], metrics[k].unit);
            if (clients == 30 && q != 1) {
              int col = q == 0 ? 0 : q == 2 ? 1 : 2;
              char note[96];
              std::snprintf(note, sizeof note, "paper, 30 users on 10 cores: %s %.2f",
                            m == 0 ? "I-Cilk" : "Cilk-F",
                            m == 0 ? paper_icilk[k][col] : paper_cilkf[k][col]);
              r.note = note;
            }
            if (!wrong.empty()) {
              r.failed = true;
              r.note = "WRONG MAILBOX: " + wrong;
            }
            rep.add(std::move(r));
            rows[m][k][q] = rep.find("email", name, p);
          }
        }
        row t = make_row("email", std::string("throughput, ") + mode_name[m], p, tput[m], "req/s");
        t.higher_is_better = true;
        if (!wrong.empty()) {
          t.failed = true;
          t.note = "WRONG MAILBOX: " + wrong;
        }
        rep.add(std::move(t));
        trow[m] = rep.find("email", std::string("throughput, ") + mode_name[m], p);
      }
      rep.add_ratio("email", "resp avg APS / oblivious", p, rows[0][0][0], rows[1][0][0],
                    goal_kind::none, 0, clients == 30 ? "paper, 30 users: I-Cilk / Cilk-F 0.097" : "");
      for (int q = 1; q < 4; ++q)
        rep.add_ratio("email", std::string("resp ") + stats[q].name + " APS / oblivious", p,
                      rows[0][0][q], rows[1][0][q], goal_kind::at_most, 0.5,
                      clients == 30 && q != 1 ? "paper, 30 users: I-Cilk / Cilk-F " +
                                                    std::to_string(q == 2 ? 125.11 / 344.58 : 500.72 / 7433.00).substr(0, 4)
                                              : std::string());
      rep.add_ratio("email", "send avg APS / oblivious", p, rows[0][1][0], rows[1][1][0],
                    goal_kind::none, 0, clients == 30 ? "paper, 30 users: I-Cilk / Cilk-F 0.78" : "");
      rep.add_ratio("email", "throughput APS / oblivious", p, trow[0], trow[1], goal_kind::at_least,
                    0.95);
    }
  }
}

}  // namespace weft_bench
#else
namespace weft_bench {
void run_email(const config&, report& rep) {
  rep.add_missing("email", "run", "", "n/a (examples/apps/email not built: WEFT_BUILD_EXAMPLES=OFF)");
}
}  // namespace weft_bench
#endif
