// bank_transfer — accounts guarded by weft::mutex, transfers between two
// accounts taken with std::scoped_lock (deadlock-free whatever the order),
// a weft::condition_variable for an auditor, and a clean stop at a deadline.
//
// Tellers (tasks) move money between random accounts until a std::stop_source
// is stopped by a deadline; a teller may pause while holding the locks (it
// "talks to the customer" with a sleep) — with weft::mutex that is fine: its
// worker runs other tellers meanwhile, and the task may resume on another
// thread and unlock there. An auditor wakes every few milliseconds
// (condition_variable_any::wait_for with the stop token) and checks that the
// total is unchanged while holding every account's lock. At the deadline the
// tellers see the token and finish their current transfer; the auditor's
// wait returns at once; the program checks the total one last time.
#include <weft/weft.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <stop_token>
#include <vector>

using namespace std::chrono_literals;

struct account {
  weft::mutex m;
  long balance = 0;  // guarded by m
};

int main() {
  constexpr int accounts = 16, tellers = 8;
  constexpr long initial = 1000;
  weft::runtime rt;
  std::vector<std::unique_ptr<account>> bank;
  for (int i = 0; i < accounts; ++i) {
    bank.push_back(std::make_unique<account>());
    bank.back()->balance = initial;
  }
  std::atomic<long> transfers{0};
  std::atomic<int> audits{0}, bad_audits{0};

  rt.run([&] {
    std::stop_source stop;
    weft::task_group g;
    for (int t = 0; t < tellers; ++t)
      g.spawn([&, t] {
        std::mt19937 rng(static_cast<unsigned>(t) * 7919u + 1);
        std::stop_token token = stop.get_token();
        while (!token.stop_requested()) {
          int a = static_cast<int>(rng() % accounts), b = static_cast<int>(rng() % accounts);
          if (a == b) continue;
          std::scoped_lock l(bank[a]->m, bank[b]->m);  // either order: no deadlock
          long amount = static_cast<long>(rng() % 50);
          if (bank[a]->balance < amount) continue;
          bank[a]->balance -= amount;
          if (rng() % 16 == 0) weft::this_task::sleep_for(100us);  // suspends holding both locks
          bank[b]->balance += amount;
          ++transfers;
        }
      });
    // The auditor: every 2 ms until stopped, lock everything (in index
    // order) and check the total.
    g.spawn([&] {
      weft::mutex tick_m;
      weft::condition_variable_any tick;
      std::stop_token token = stop.get_token();
      std::unique_lock tl(tick_m);
      while (!tick.wait_for(tl, token, 2ms, [&] { return token.stop_requested(); })) {
        std::vector<std::unique_lock<weft::mutex>> all;
        for (auto& acc : bank) all.emplace_back(acc->m);
        long total = 0;
        for (auto& acc : bank) total += acc->balance;
        ++audits;
        if (total != accounts * initial) ++bad_audits;
      }
    });
    // The deadline: stop everyone after 200 ms.
    weft::this_task::sleep_for(200ms);
    stop.request_stop();
    g.sync();
  });

  long total = 0;
  for (auto& acc : bank) total += acc->balance;
  std::printf("%ld transfers, %d audits, total %ld (expected %ld)\n", transfers.load(), audits.load(),
              total, accounts * initial);
  if (total != accounts * initial || bad_audits.load() != 0 || transfers.load() == 0) {
    std::printf("FAILED: %d bad audits\n", bad_audits.load());
    return 1;
  }
  return 0;
}
