// weft-bench — composition (weft/when.hpp): fan-out/fan-in and then chains.
//
// fan-in: a root task starts N = 10,000 weft::async children (each returns
// its index) and collects them, either with one when_all over the range
// followed by a get() of each (ready) future, or with a loop of get()s on the
// same futures. Both include the fan-out; the ratio is (when_all / get loop),
// so above 1 means when_all costs more. The get loop has a fast path
// when_all cannot use: a child still at the bottom of the caller's deque is
// run inline by get() (nobody stole it), whereas when_all registers a callback
// on every child and suspends once.
// then chain: C = 1,000 continuations, each adding one, against the same
// number of async-then-get round trips in a loop.
#include <chrono>
#include <cstddef>
#include <exception>
#include <string>
#include <vector>

#include <weft/weft.hpp>

#include "bench.hpp"
#include "stats.hpp"

namespace weft_bench {
namespace {

constexpr std::size_t fan = 10'000;
constexpr int chain = 1'000;

std::string fan_params(unsigned w) { return std::to_string(fan) + " futures, " + workers_param(w); }
std::string chain_params(unsigned w) { return std::to_string(chain) + " steps, " + workers_param(w); }

row to_row(const std::string& name, const std::string& params, const std::vector<double>& s,
           bool wrong, double per) {
  row r = make_row("compose", name, params, s, "s");
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3g us each", r.value * 1e6 / per);
  r.note = buf;
  if (wrong) {
    r.failed = true;
    r.note = "WRONG RESULT";
  }
  return r;
}

std::vector<weft::future<std::size_t>> fan_out() {
  std::vector<weft::future<std::size_t>> v;
  v.reserve(fan);
  for (std::size_t i = 0; i < fan; ++i) v.push_back(weft::async([i] { return i; }));
  return v;
}

row measure_fan(const config& cfg, unsigned w, bool use_when_all) {
  const std::string name = use_when_all ? "fan-in: when_all(range) then get each" : "fan-in: loop of get()";
  const std::string params = fan_params(w);
  watchdog_scope wd("compose: " + name + ", " + params, std::chrono::seconds(120));
  weft::runtime rt{weft::options{.workers = w}};
  const std::size_t expected = fan * (fan - 1) / 2;
  bool wrong = false;
  auto samples = time_reps(cfg.reps, cfg.warmup, [&] {
    std::size_t sum = rt.run([&] {
      auto v = fan_out();
      std::size_t acc = 0;
      if (use_when_all) {
        for (auto& f : weft::when_all(v.begin(), v.end()).get()) acc += f.get();
      } else {
        for (auto& f : v) acc += f.get();
      }
      return acc;
    });
    if (sum != expected) wrong = true;
  });
  return to_row(name, params, samples, wrong, fan);
}

row measure_chain(const config& cfg, unsigned w, bool use_then) {
  const std::string name = use_then ? "then chain" : "loop of async().get()";
  const std::string params = chain_params(w);
  watchdog_scope wd("compose: " + name + ", " + params, std::chrono::seconds(120));
  weft::runtime rt{weft::options{.workers = w}};
  bool wrong = false;
  auto samples = time_reps(cfg.reps, cfg.warmup, [&] {
    int got = rt.run([&] {
      if (use_then) {
        weft::promise<int> start;
        weft::future<int> f = start.get_future();
        for (int i = 0; i < chain; ++i) f = f.then([](weft::future<int> x) { return x.get() + 1; });
        start.set_value(0);
        return f.get();
      }
      int x = 0;
      for (int i = 0; i < chain; ++i) x = weft::async([x] { return x + 1; }).get();
      return x;
    });
    if (got != chain) wrong = true;
  });
  return to_row(name, params, samples, wrong, chain);
}

template <class F>
void add_guarded(report& rep, const std::string& name, const std::string& params, F&& f) {
  try {
    rep.add(f());
  } catch (const std::exception& e) {
    rep.add_missing("compose", name, params, std::string("error: ") + e.what(), true);
  }
}

}  // namespace

void run_compose(const config& cfg, report& rep) {
  const std::string wa = "fan-in: when_all(range) then get each", gl = "fan-in: loop of get()";
  const std::string th = "then chain", ag = "loop of async().get()";
  for (unsigned w : cfg.workers) {
    add_guarded(rep, wa, fan_params(w), [&] { return measure_fan(cfg, w, true); });
    add_guarded(rep, gl, fan_params(w), [&] { return measure_fan(cfg, w, false); });
    rep.add_ratio("compose", "when_all / loop of get()", workers_param(w),
                  rep.find("compose", wa, fan_params(w)), rep.find("compose", gl, fan_params(w)));
  }
  for (unsigned w : cfg.workers) {
    add_guarded(rep, th, chain_params(w), [&] { return measure_chain(cfg, w, true); });
    add_guarded(rep, ag, chain_params(w), [&] { return measure_chain(cfg, w, false); });
    rep.add_ratio("compose", "then chain / async().get() loop", workers_param(w),
                  rep.find("compose", th, chain_params(w)), rep.find("compose", ag, chain_params(w)));
  }
}

}  // namespace weft_bench
