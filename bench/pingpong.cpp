// weft-bench — ping-pong: R round trips between two parties.
//
// weft: two tasks (the branches of one fork_join) pass a token through two
// arrays of ivars — round trip i is ping[i].put then pong[i].get, so every
// round trip suspends and resumes each task once. The arrays are built
// before each timed repetition.
// pthreads: two std::threads hand a turn flag back and forth under one mutex
// and condition variable; once scheduled freely, once pinned to one CPU.
#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <weft/weft.hpp>

#include "bench.hpp"
#include "stats.hpp"

namespace weft_bench {
namespace {

constexpr long rounds = 100'000;

std::string rounds_params(const std::string& extra) {
  return std::to_string(rounds) + " round trips, " + extra;
}

row to_row(const std::string& name, const std::string& params, const std::vector<double>& s,
           bool wrong) {
  row r = make_row("pingpong", name, params, s, "s");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g us per round trip", r.value * 1e6 / rounds);
  r.note = buf;
  if (wrong) {
    r.failed = true;
    r.note = "WRONG RESULT: token lost or duplicated";
  }
  return r;
}

row measure_weft(const config& cfg, unsigned w) {
  const std::string name = "weft tasks, ivars";
  const std::string params = rounds_params(workers_param(w));
  watchdog_scope wd("pingpong: " + name + ", " + params, std::chrono::seconds(120));
  weft::runtime rt{weft::options{.workers = w}};
  std::unique_ptr<weft::ivar<long>[]> ping, pong;
  const long expected = rounds * (rounds + 1) / 2;
  bool wrong = false;
  auto samples = time_reps_with_setup(
      cfg.reps, cfg.warmup,
      [&] {
        ping.reset();
        pong.reset();
        ping.reset(new weft::ivar<long>[rounds]);
        pong.reset(new weft::ivar<long>[rounds]);
      },
      [&] {
        long sum = rt.run([&] {
          long acc = 0;
          weft::fork_join(
              [&] {
                for (long i = 0; i < rounds; ++i) {
                  ping[i].put(i);
                  acc += pong[i].get();
                }
              },
              [&] {
                for (long i = 0; i < rounds; ++i) pong[i].put(ping[i].get() + 1);
              });
          return acc;
        });
        if (sum != expected) wrong = true;
      });
  return to_row(name, params, samples, wrong);
}

// Pins the calling thread to `cpu` (best effort).
void pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

int first_allowed_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) return i;
  }
  return 0;
}

bool pthread_pingpong_once(int pin_cpu) {
  std::mutex m;
  std::condition_variable cv;
  int turn = 0;  // 0: ping sends, 1: pong replies
  long token = 0;
  std::thread ping([&] {
    if (pin_cpu >= 0) pin_self(pin_cpu);
    std::unique_lock lk(m);
    for (long i = 0; i < rounds; ++i) {
      token = i;
      turn = 1;
      cv.notify_one();
      cv.wait(lk, [&] { return turn == 0; });
    }
  });
  long sum = 0;
  std::thread pong([&] {
    if (pin_cpu >= 0) pin_self(pin_cpu);
    std::unique_lock lk(m);
    for (long i = 0; i < rounds; ++i) {
      cv.wait(lk, [&] { return turn == 1; });
      sum += token + 1;
      turn = 0;
      cv.notify_one();
    }
  });
  ping.join();
  pong.join();
  return sum == rounds * (rounds + 1) / 2;
}

row measure_pthreads(const config& cfg, bool pinned) {
  const std::string name = "pthreads, mutex+condvar";
  const std::string params = rounds_params(pinned ? "both on 1 CPU" : "2 threads, unpinned");
  watchdog_scope wd("pingpong: " + name + ", " + params, std::chrono::seconds(180));
  const int cpu = pinned ? first_allowed_cpu() : -1;
  bool wrong = false;
  auto samples = time_reps(cfg.reps, cfg.warmup, [&] {
    if (!pthread_pingpong_once(cpu)) wrong = true;
  });
  return to_row(name, params, samples, wrong);
}

template <class F>
void add_guarded(report& rep, const std::string& name, const std::string& params, F&& f) {
  try {
    rep.add(f());
  } catch (const std::exception& e) {
    rep.add_missing("pingpong", name, params, std::string("error: ") + e.what(), true);
  }
}

}  // namespace

void run_pingpong(const config& cfg, report& rep) {
  for (unsigned w : cfg.workers) {
    add_guarded(rep, "weft tasks, ivars", rounds_params(workers_param(w)),
                [&] { return measure_weft(cfg, w); });
  }
  add_guarded(rep, "pthreads, mutex+condvar", rounds_params("2 threads, unpinned"),
              [&] { return measure_pthreads(cfg, false); });
  add_guarded(rep, "pthreads, mutex+condvar", rounds_params("both on 1 CPU"),
              [&] { return measure_pthreads(cfg, true); });

  const row* pthreads = rep.find("pingpong", "pthreads, mutex+condvar",
                                 rounds_params("2 threads, unpinned"));
  for (unsigned w : cfg.workers) {
    rep.add_ratio("pingpong", "pthreads / weft (unpinned pthreads)", workers_param(w), pthreads,
                  rep.find("pingpong", "weft tasks, ivars", rounds_params(workers_param(w))),
                  goal_kind::at_least, 20, "weft speedup");
  }
  rep.add_ratio("pingpong", "pthreads on 1 CPU / weft", workers_param(1),
                rep.find("pingpong", "pthreads, mutex+condvar", rounds_params("both on 1 CPU")),
                rep.find("pingpong", "weft tasks, ivars", rounds_params(workers_param(1))),
                goal_kind::none, 0, "like for like: one core each");
}

}  // namespace weft_bench
