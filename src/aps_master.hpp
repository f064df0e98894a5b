// weft — the APS master (I-Cilk §3 and §5): every quantum L it measures each
// level's utilisation, computes desires (Figure 1), allocates workers
// top-down, assigns workers to levels and wakes the ones that must move.
// Workers learn their new level through a flag they check at strand
// boundaries and between tasks (scheduler_levels.cpp).
//
// The quantum is a function any thread may run, under quantum_mutex_: the
// workers run it themselves at their strand boundaries when it is due
// (quantum_if_due) and at once when urgent work arrives at a level without a
// worker or their own level runs dry (request_early_quantum). The master
// thread is only the backup for when no worker reaches a boundary: when the
// workers keep the quanta up to date it naps 10 ms at a time. (With a
// master thread doing every quantum, the master competes with the workers for
// saturated cores and the OS runs it late: at 1-2 workers an urgent task
// waited milliseconds for it — docs/priorities.md.)
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
  explicit aps_master(scheduler& s) noexcept;
  aps_master(const aps_master&) = delete;
  aps_master& operator=(const aps_master&) = delete;

  // Starts the master thread if it does not run yet (and stop() was not
  // called); throws std::system_error if it cannot.
  void start() WEFT_EXCLUDES(mutex_);
  // Stops and joins the master thread (if it runs); it does not start again.
  // Waits for a quantum another thread runs and closes the quantum: after
  // stop() returns no quantum reads the scheduler's deques.
  void stop() noexcept WEFT_EXCLUDES(mutex_, quantum_mutex_);
  // relaxed: set once by start; a late view only delays accounting or one
  // early quantum.
  bool running() const noexcept { return running_.load(std::memory_order_relaxed); }
  // Runs a quantum now on the calling thread; if another thread is running
  // one (its measurement may predate the caller's news), asks the master
  // thread for another. `self`: the calling worker of this runtime, if any;
  // it is at a strand boundary (or between tasks), so if a worker must
  // change level it is the one moved first. Call only while running().
  void request_early_quantum(worker* self) noexcept WEFT_EXCLUDES(quantum_mutex_, mutex_);
  // Work is ready at `level`: if the master runs and gives that level no
  // worker, run an early quantum instead of letting the work wait up to L
  // (an I/O completion for an urgent handler would otherwise wait out the
  // quantum) — unless the last quantum already saw work there and gave it
  // no worker (more urgent levels take them all; another quantum would
  // decide the same: no storm of quanta from a starved level's spawns).
  // relaxed: all hints; a stale value costs one spurious quantum or one
  // quantum's delay.
  void note_level_work(unsigned level) noexcept WEFT_EXCLUDES(quantum_mutex_, mutex_) {
    if (running() && allotted_[level].load(std::memory_order_relaxed) == 0 &&
        !starved_[level].load(std::memory_order_relaxed))
      request_early_quantum(calling_worker());
  }
  // A worker found its level (`level`) without work (find_work): runs the
  // quantum if the last one started more than L/8 ago. If the last quantum
  // left a level with work and no worker (starved_) and allotted `level` at
  // most this one worker, the bound is L/64: a hand-off to a less urgent
  // level (a request loop handing a request to its handler while it holds
  // the only worker) then costs one quantum, not L/8 of spinning. (With more
  // workers at `level`, fork-join among them runs dry for moments while a
  // background level starves; a quantum then could change nothing.) Quanta
  // within L/4 of the last measured one are short (run_quantum): they apply
  // only Figure 1's lines 1-2. relaxed: as quantum_if_due.
  void quantum_if_stale(worker* self, unsigned level, std::uint64_t now) noexcept
      WEFT_EXCLUDES(quantum_mutex_, mutex_) {
    const std::uint64_t due = due_ns_.load(std::memory_order_relaxed);
    if (now + stale_ns_ >= due ||
        (now + starved_ns_ >= due && allotted_[level].load(std::memory_order_relaxed) <= 1 &&
         any_starved()))
      try_quantum(self);
  }
  // A worker at a strand boundary read the clock (`now`, scheduler::now_ns):
  // runs the quantum if it is due. relaxed: a hint (a late view delays the
  // quantum by one boundary; two workers racing are serialised by the lock).
  void quantum_if_due(worker* self, std::uint64_t now) noexcept WEFT_EXCLUDES(quantum_mutex_, mutex_) {
    if (now >= due_ns_.load(std::memory_order_relaxed)) try_quantum(self);
  }

 private:
  // One quantum's findings, passed from step to step.
  struct quantum {
    std::vector<double> busy;            // busy ns per level
    std::vector<bool> running_at;        // a strand runs at the level
    std::vector<bool> has_work;          // ready or running work at the level
    bool anything = false;               // some level has work
    bool short_window = false;           // < L/4 since the last measured quantum: no measurement
  };
  void loop() WEFT_EXCLUDES(mutex_, quantum_mutex_);  // the thread's body
  worker* calling_worker() const noexcept;  // this thread's worker of sched_, or nullptr
  // Some level had work and no worker at the last quantum. relaxed: hints.
  bool any_starved() const noexcept {
    for (const auto& s : starved_)
      if (s.load(std::memory_order_relaxed)) return true;
    return false;
  }
  // Runs a quantum unless another thread runs one; returns whether it ran.
  bool try_quantum(worker* self) noexcept WEFT_EXCLUDES(quantum_mutex_);
  // One quantum: the steps below, in order.
  void run_quantum(worker* self) noexcept WEFT_REQUIRES(quantum_mutex_);
  void measure(quantum& q, std::uint64_t now) WEFT_REQUIRES(quantum_mutex_);
  void compute_desires(quantum& q) WEFT_REQUIRES(quantum_mutex_);
  void allocate(const quantum& q) WEFT_REQUIRES(quantum_mutex_);
  bool assign(worker* self) WEFT_REQUIRES(quantum_mutex_);
  void wake(const quantum& q, bool changed) noexcept WEFT_REQUIRES(quantum_mutex_);

  scheduler& sched_;
  mutex mutex_;
  std::condition_variable cv_;
  std::thread thread_ WEFT_GUARDED_BY(mutex_);
  bool stop_ WEFT_GUARDED_BY(mutex_) = false;
  std::atomic<bool> running_{false};
  // Workers allotted to each level in the current quantum (written by the
  // quantum, under quantum_mutex_, relaxed; read as a hint to request an early quantum).
  std::atomic<unsigned> allotted_[priority_levels] = {};
  // The last quantum saw ready work at the level and gave it no worker
  // (written under quantum_mutex_, relaxed; read as a hint by note_level_work).
  std::atomic<bool> starved_[priority_levels] = {};
  // Set when a quantum is asked for while another thread runs one (relaxed hint).
  std::atomic<bool> early_{false};
  // now_ns() at which the next quantum is due (written under quantum_mutex_;
  // relaxed: a hint, see quantum_if_due).
  std::atomic<std::uint64_t> due_ns_{0};
  const std::uint64_t quantum_ns_;  // L in ns (options::aps_quantum)
  // 7/8 L in ns: quantum_if_stale runs the quantum when it is due within this.
  const std::uint64_t stale_ns_;
  // 63/64 L in ns: quantum_if_stale's bound when a level starves.
  const std::uint64_t starved_ns_;
  // Quanta in a row that found no work anywhere (written under
  // quantum_mutex_; relaxed: the master's nap length, a hint).
  std::atomic<unsigned> idle_quanta_{0};

  // The state carried from quantum to quantum.
  mutex quantum_mutex_;
  // Set by stop(): no quantum runs after it (run_quantum returns at once).
  bool closed_ WEFT_GUARDED_BY(quantum_mutex_) = false;
  std::vector<double> desire_ WEFT_GUARDED_BY(quantum_mutex_);
  std::vector<unsigned> allot_ WEFT_GUARDED_BY(quantum_mutex_);
  // per worker, per level
  std::vector<std::vector<std::int64_t>> seen_busy_ WEFT_GUARDED_BY(quantum_mutex_);
  // span start (packed) credited so far, and of it this much
  std::vector<std::uint64_t> credited_span_ WEFT_GUARDED_BY(quantum_mutex_);
  std::vector<std::uint64_t> credited_ns_ WEFT_GUARDED_BY(quantum_mutex_);
  std::uint64_t quantum_start_ WEFT_GUARDED_BY(quantum_mutex_) = 0;  // start of the measured window
  std::uint64_t last_quantum_ns_ WEFT_GUARDED_BY(quantum_mutex_) = 0;  // the last quantum, short or not
  // per level: sum of allotment x ns over the measured window (utilisation's
  // denominator; short quanta inside the window may change the allotment)
  std::vector<double> allot_ns_ WEFT_GUARDED_BY(quantum_mutex_);
};

}  // namespace weft::detail
