// weft — the unit of work that deques hold.
#pragma once

namespace weft::detail {

// Anything a deque can hold: a spawned task, an async task, or the continuation
// of a suspended fiber. `execute` runs it exactly once; the item may free itself.
// Invariant: an item is in at most one deque at a time, and is executed by the
// worker that removes it (pop or steal) — never by two workers.
struct work_item {
  using execute_fn = void (*)(work_item*) noexcept;
  execute_fn execute;
  // Who may pop this item back at a join: the task_group, fork_join frame or
  // future state that pushed it (nullptr for continuations). Joins pop from
  // the bottom of the current deque only items carrying their own tag, so they
  // never run (or lose) someone else's item, whatever the steal policy did to
  // the deque while the joining task was suspended.
  const void* tag;
  constexpr work_item(execute_fn fn, const void* owner_tag = nullptr) noexcept
      : execute(fn), tag(owner_tag) {}
};

}  // namespace weft::detail
