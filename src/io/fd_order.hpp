// weft — the per-descriptor order of I/O operations (docs/io.md: operations
// on one descriptor in one direction complete in the order they were
// started, on every backend, whichever worker started them).
//
// Two things keep that promise on the epoll and io_uring backends:
//  * every operation on descriptor fd goes to the same I/O thread or ring
//    (home_of: fd modulo their number), whose queue keeps submission order;
//  * the try-first attempt on the worker is made only while no operation on
//    (fd, direction) is in the backend (`idle`), so it never overtakes one
//    already queued. This table counts those operations.
//
// Counts live in a lazily grown two-level table indexed by descriptor:
// 1,024 blocks of 2,048 descriptors cover every descriptor below 2^21 (the
// kernel's default cap on RLIMIT_NOFILE is 2^20); a descriptor beyond that
// shares its counter with others (fd modulo the table's span), which can only
// make a try-first attempt be skipped, never an order be broken.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "io_common.hpp"
#include "weft/detail/assert.hpp"
#include "weft/detail/mutex.hpp"

namespace weft::detail {

class fd_order {
 public:
  fd_order() = default;
  ~fd_order() {
    // relaxed: the backend is being destroyed; no other thread uses it.
    for (auto& b : blocks_) delete[] b.load(std::memory_order_relaxed);
  }
  fd_order(const fd_order&) = delete;
  fd_order& operator=(const fd_order&) = delete;

  static unsigned home_of(int fd, unsigned homes) noexcept {
    return static_cast<unsigned>(fd) % homes;
  }

  // True if no operation on (fd, dir) is in the backend: a try-first
  // attempt cannot overtake one. relaxed: an operation started earlier by the
  // same task, or by any task this one synchronised with since, was counted
  // (enter) before that, so the load sees it (write-read coherence through
  // happens-before); operations of tasks running concurrently have no order
  // to keep.
  bool idle(int fd, io_direction dir) noexcept {
    std::atomic<std::uint32_t>* c = find(fd, dir);
    return !c || c->load(std::memory_order_relaxed) == 0;
  }

  // Counts `op` as in the backend; call before handing it over. May allocate
  // a block (std::bad_alloc). Counted once: an operation enters one backend.
  void enter(io_op* op) {
    WEFT_ASSERT(!op->ordered, "an operation is counted in fd_order once");
    // relaxed: see idle(); the hand-off to the backend publishes the op.
    counter(op->fd, direction_of(op->kind))->fetch_add(1, std::memory_order_relaxed);
    op->ordered = true;
  }

  // The backend is done with `op`; call before completing it, so that a
  // task resumed by the completion sees the count without it.
  void leave(io_op* op) noexcept {
    if (!op->ordered) return;
    op->ordered = false;
    // relaxed: the completion (done.set(), a release RMW) that follows
    // orders this before anything the resumed task does.
    [[maybe_unused]] const std::uint32_t before =
        find(op->fd, direction_of(op->kind))->fetch_sub(1, std::memory_order_relaxed);
    WEFT_ASSERT(before > 0, "fd_order: a per-descriptor in-flight count went below zero");
  }

 private:
  static constexpr unsigned block_bits = 11;                   // 2,048 descriptors
  static constexpr unsigned block_count = 1024;
  static constexpr std::uint32_t span = block_count << block_bits;  // 2^21

  static std::uint32_t slot(int fd) noexcept { return static_cast<std::uint32_t>(fd) % span; }
  static unsigned index(int fd, io_direction dir) noexcept {
    return ((slot(fd) & ((1u << block_bits) - 1)) << 1) | (dir == io_direction::out ? 1u : 0u);
  }

  std::atomic<std::uint32_t>* find(int fd, io_direction dir) noexcept {
    // acquire: pairs with counter()'s release publication of a new block.
    std::atomic<std::uint32_t>* b = blocks_[slot(fd) >> block_bits].load(std::memory_order_acquire);
    return b ? &b[index(fd, dir)] : nullptr;
  }

  std::atomic<std::uint32_t>* counter(int fd, io_direction dir) {
    if (std::atomic<std::uint32_t>* c = find(fd, dir)) return c;
    lock_guard lock(grow_mutex_);
    auto& slot_ref = blocks_[slot(fd) >> block_bits];
    // relaxed: stores to the slot happen under grow_mutex_, which we hold.
    std::atomic<std::uint32_t>* b = slot_ref.load(std::memory_order_relaxed);
    if (!b) {
      b = new std::atomic<std::uint32_t>[std::size_t{2} << block_bits]();
      // release: a reader that loads the block sees its zeroed counters.
      slot_ref.store(b, std::memory_order_release);
    }
    return &b[index(fd, dir)];
  }

  // Serialises growth: a slot goes from null to its block once, under it.
  // blocks_ is not WEFT_GUARDED_BY it: readers load the slots without it
  // (acquire, find()); only the null-to-block store needs it.
  mutex grow_mutex_;
  std::atomic<std::atomic<std::uint32_t>*> blocks_[block_count] = {};
};

}  // namespace weft::detail
