// weft — the task-aware locks and coordination types in one include:
// mutex, timed_mutex, shared_mutex, lock(token, ...) (weft/mutex.hpp),
// condition_variable(_any) (weft/condition_variable.hpp),
// counting_semaphore, binary_semaphore, latch, barrier (weft/semaphore.hpp)
// and task_local (weft/task_local.hpp). docs/sync.md.
#pragma once

#include "weft/condition_variable.hpp"
#include "weft/mutex.hpp"
#include "weft/semaphore.hpp"
#include "weft/task_local.hpp"
