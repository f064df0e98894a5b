// weft — the APS master (I-Cilk §3 and §5): a thread that every quantum L
// measures each level's utilisation, computes desires (Figure 1), allocates
// workers top-down, assigns workers to levels and wakes the ones that must
// move. Workers learn their new level through a flag they check at strand
// boundaries and between tasks (scheduler_levels.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <thread>
#include <vector>

#include "weft/detail/mutex.hpp"
#include "weft/detail/scheduler_hooks.hpp"
#include "weft/detail/thread_annotations.hpp"

namespace weft::detail {

class scheduler;
struct worker;

class aps_master {
 public:
  explicit aps_master(scheduler& s) noexcept : sched_(s) {}
  aps_master(const aps_master&) = delete;
  aps_master& operator=(const aps_master&) = delete;

  // Starts the master thread if it does not run yet (and stop() was not
  // called); throws std::system_error if it cannot.
  void start() WEFT_EXCLUDES(mutex_);
  // Stops and joins the master thread (if it runs); it does not start again.
  void stop() noexcept WEFT_EXCLUDES(mutex_);
  // relaxed: set once by start; a late view only delays accounting or one
  // early quantum.
  bool running() const noexcept { return running_.load(std::memory_order_relaxed); }
  // Asks the master for an early quantum (rate-limited by the flag).
  void request_early_quantum() noexcept;
  // Work is ready at `level`: if the master runs and gives that level no
  // worker, ask for an early quantum instead of letting the work wait up to L
  // (an I/O completion for an urgent handler would otherwise wait out the
  // quantum). relaxed: both are hints; a stale allotment costs one spurious
  // quantum or one quantum's delay.
  void note_level_work(unsigned level) noexcept {
    if (running() && allotted_[level].load(std::memory_order_relaxed) == 0) request_early_quantum();
  }

 private:
  // One quantum's findings, passed from step to step.
  struct quantum {
    double elapsed = 1;                  // ns since the previous quantum
    std::vector<double> busy;            // busy ns per level
    std::vector<bool> running_at;        // a strand runs at the level
    std::vector<bool> has_work;          // ready or running work at the level
    bool anything = false;               // some level has work
  };
  void loop() WEFT_EXCLUDES(mutex_);  // the thread's body
  // The quantum's steps, in order. Master thread only.
  void measure(quantum& q, std::uint64_t now);
  void compute_desires(quantum& q);
  void allocate(const quantum& q);
  bool assign();
  void wake(const quantum& q, bool changed) noexcept;

  scheduler& sched_;
  mutex mutex_;
  std::condition_variable cv_;
  std::thread thread_ WEFT_GUARDED_BY(mutex_);
  bool stop_ WEFT_GUARDED_BY(mutex_) = false;
  std::atomic<bool> running_{false};
  // Workers allotted to each level in the current quantum (master writes,
  // relaxed; read as a hint to request an early quantum).
  std::atomic<unsigned> allotted_[priority_levels] = {};
  // Set when a worker or a spawn asks for an early quantum (relaxed hint).
  std::atomic<bool> early_{false};

  // Master thread only: the state carried from quantum to quantum.
  std::vector<double> desire_;
  std::vector<unsigned> allot_;
  std::vector<std::vector<std::int64_t>> seen_busy_;  // per worker, per level
  std::vector<std::uint64_t> credited_span_;  // span start (packed) credited so far
  std::vector<std::uint64_t> credited_ns_;    // of it, this much
  std::uint64_t quantum_start_ = 0;
  unsigned idle_quanta_ = 0;
};

}  // namespace weft::detail
