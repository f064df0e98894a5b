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
  explicit constexpr work_item(execute_fn fn) noexcept : execute(fn) {}
};

}  // namespace weft::detail
