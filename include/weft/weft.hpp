// weft — a work-stealing runtime with lazily promoted fibers. Umbrella header:
// every public header except the I/O layer (weft/io.hpp, weft/resolve.hpp),
// which a program includes itself (docs/api.md).
#pragma once

#include "weft/async.hpp"
#include "weft/blocking.hpp"
#include "weft/channel.hpp"
#include "weft/future.hpp"
#include "weft/ivar.hpp"
#include "weft/locks.hpp"
#include "weft/mvar.hpp"
#include "weft/packaged_task.hpp"
#include "weft/parallel.hpp"
#include "weft/pause.hpp"
#include "weft/priority.hpp"
#include "weft/runtime.hpp"
#include "weft/task_group.hpp"
#include "weft/this_task.hpp"
#include "weft/when.hpp"
