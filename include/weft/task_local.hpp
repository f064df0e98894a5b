// weft — task_local<T>: a value that follows the task, not the thread.
//
// A thread_local read before and after a suspension point (get, sync, a
// weft lock, sleep, I/O) may be two different threads' variables, since a
// task resumes on whichever worker picks it up (docs/sync.md). A task_local
// is bound to the calling task for a scope, and reads in that task see the
// binding wherever the task runs:
//
//   weft::task_local<std::string> request_id;
//   request_id.scope("req-42", [&] {
//     auto r = read_all(sock);          // may resume on another worker
//     log(request_id.get(), r);         // still "req-42"
//   });
//
// Lifetime: the value lives in the scope call's frame (on the task's stack);
// it is constructed when scope() starts and destroyed when it returns or
// throws — so at the latest when the task ends. Bindings nest (an inner
// scope shadows an outer one of the same task_local). The task_local object
// must outlive every scope on it.
//
// Identity: a binding belongs to the task's execution stack (its fiber, or
// a plain thread). A child task does not inherit it, with one caveat: a
// child that runs inline on its parent's stack (not stolen) sees the
// parent's binding while it runs. Bind in the child what the child needs.
//
// Errors: get() without a binding in the calling task throws
// std::logic_error("weft::task_local: no value bound in this task");
// try_get() returns nullptr instead. Cost: get() hashes the task identity
// into one of 16 buckets and scans that bucket's bindings under a spin lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "weft/detail/completion.hpp"
#include "weft/detail/sync_core.hpp"
#include "weft/detail/thread_annotations.hpp"

namespace weft {

template <class T>
class task_local {
 public:
  task_local() = default;
  task_local(const task_local&) = delete;
  task_local& operator=(const task_local&) = delete;

  // Binds `value` to the calling task while f() runs; returns f()'s result.
  template <class F>
  decltype(auto) scope(T value, F&& f) {
    binding b(*this, std::move(value));
    return std::invoke(std::forward<F>(f));
  }

  // The calling task's innermost binding (throws std::logic_error if none).
  T& get() {
    if (T* p = try_get()) return *p;
    throw std::logic_error("weft::task_local: no value bound in this task");
  }
  T* try_get() noexcept WEFT_NO_THREAD_SAFETY_ANALYSIS {
    const void* me = detail::current_task().id;
    bucket& bk = bucket_of(me);
    bk.lk.lock();
    T* found = nullptr;
    // Newest first: an inner scope is pushed at the head.
    for (node* n = bk.head; n; n = n->next)
      if (n->owner == me) {
        found = &n->value;
        break;
      }
    bk.lk.unlock();
    return found;
  }

 private:
  struct node {
    const void* owner;
    T value;
    node* prev = nullptr;  // guarded by the bucket's lock
    node* next = nullptr;  // guarded by the bucket's lock
  };
  struct bucket {
    detail::spin_lock lk;
    node* head WEFT_GUARDED_BY(lk) = nullptr;
  };

  // A binding of the calling task; unlinked by whichever thread runs its
  // destructor (the task may have moved: the bucket is found from the
  // identity recorded at construction).
  class binding {
   public:
    binding(task_local& tl, T v) : tl_(tl), n_{detail::current_task().id, std::move(v)} {
      bucket& bk = tl_.bucket_of(n_.owner);
      bk.lk.lock();
      n_.next = bk.head;
      if (bk.head) bk.head->prev = &n_;
      bk.head = &n_;
      bk.lk.unlock();
    }
    ~binding() WEFT_NO_THREAD_SAFETY_ANALYSIS {
      bucket& bk = tl_.bucket_of(n_.owner);
      bk.lk.lock();
      if (n_.prev) n_.prev->next = n_.next; else bk.head = n_.next;
      if (n_.next) n_.next->prev = n_.prev;
      bk.lk.unlock();
    }
    binding(const binding&) = delete;
    binding& operator=(const binding&) = delete;

   private:
    task_local& tl_;
    node n_;
  };

  bucket& bucket_of(const void* id) noexcept {
    auto h = reinterpret_cast<std::uintptr_t>(id);
    return buckets_[(h >> 6 ^ h >> 12) % buckets];
  }

  static constexpr std::size_t buckets = 16;
  bucket buckets_[buckets];
};

}  // namespace weft
