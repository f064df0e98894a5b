// weft — an intrusive lock-free multi-producer single-consumer queue of I/O
// operations (D. Vyukov's non-intrusive-stub MPSC queue): the request queue
// of an epoll I/O thread. Any worker may push (every operation on a
// descriptor goes to the same I/O thread, whichever worker starts it:
// fd_order.hpp), and the order of pushes is the order of pops, so the
// operations one task starts on a descriptor reach the I/O thread in the
// order it started them, even when the task migrated in between.
//
// Push is one exchange and one store, never blocks and never fails. Pop may
// report "empty" while a producer is between its two steps; that producer
// then signals the consumer (eventfd) after its push, so the consumer looks
// again.
#pragma once

#include <atomic>

#include "io_common.hpp"
#include "weft/detail/arch.hpp"  // cache_line_size

namespace weft::detail {

class mpsc_queue {
 public:
  mpsc_queue() noexcept : head_(&stub_), tail_(&stub_) {}
  mpsc_queue(const mpsc_queue&) = delete;
  mpsc_queue& operator=(const mpsc_queue&) = delete;

  // Any thread.
  void push(io_op* op) noexcept {
    // relaxed: published by the release store of the predecessor's link.
    op->next.store(nullptr, std::memory_order_relaxed);
    link(op);
  }

  // The consumer only. nullptr when empty (or a push is half done).
  io_op* pop() noexcept {
    io_op* tail = tail_;
    // acquire: pairs with link()'s release store; the op's fields are visible.
    io_op* next = tail->next.load(std::memory_order_acquire);
    if (tail == &stub_) {
      if (!next) return nullptr;
      tail_ = next;
      tail = next;
      next = next->next.load(std::memory_order_acquire);
    }
    if (next) {
      tail_ = next;
      return tail;
    }
    // tail is the last linked node: unless a push is in progress (head_ moved
    // past it), put the stub behind it so that tail can be handed out.
    // acquire: pairs with link()'s acq_rel exchange.
    if (tail != head_.load(std::memory_order_acquire)) return nullptr;
    // relaxed: the stub is the consumer's own node; link() publishes it.
    stub_.next.store(nullptr, std::memory_order_relaxed);
    link(&stub_);
    next = tail->next.load(std::memory_order_acquire);
    if (next) {
      tail_ = next;
      return tail;
    }
    return nullptr;
  }

 private:
  void link(io_op* op) noexcept {
    // acq_rel: orders pushes (their order is the queue's order); acquire
    // makes the previous node ours to link to.
    io_op* prev = head_.exchange(op, std::memory_order_acq_rel);
    // release: publishes op (and its fields) to the consumer.
    prev->next.store(op, std::memory_order_release);
  }

  alignas(cache_line_size) std::atomic<io_op*> head_;  // producers
  alignas(cache_line_size) io_op* tail_;               // consumer only
  io_op stub_;
};

}  // namespace weft::detail
