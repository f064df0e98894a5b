#include "weft/runtime.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>

#include "scheduler.hpp"

namespace weft {

namespace {

#if defined(WEFT_SANITIZER_BUILD)
constexpr std::size_t default_stack = std::size_t{4} << 20;  // sanitizers grow frames
#else
constexpr std::size_t default_stack = std::size_t{1} << 20;
#endif
constexpr std::size_t min_stack = std::size_t{16} << 10;
constexpr std::size_t max_stack = std::size_t{1} << 30;
constexpr unsigned max_workers = 1024;
// spawn_blocking's pool (see options::blocking_threads for the choice).
constexpr unsigned default_blocking_threads = 64;
constexpr unsigned max_blocking_threads = 4096;

unsigned workers_from_environment() {
  const char* env = std::getenv("WEFT_WORKERS");
  if (!env || !*env) return 0;
  std::string s(env);
  if (s.find_first_not_of("0123456789") != std::string::npos || s.size() > 6) {
    throw configuration_error("WEFT_WORKERS must be a positive integer, not '" + s + "'");
  }
  unsigned long n = std::stoul(s);
  if (n == 0 || n > max_workers) {
    throw configuration_error("WEFT_WORKERS must be between 1 and " +
                              std::to_string(max_workers) + ", not " + s);
  }
  return static_cast<unsigned>(n);
}

// WEFT_IO picks the backend when options::io is automatic.
io_backend io_from_environment(io_backend chosen) {
  const char* env = std::getenv("WEFT_IO");
  if (chosen != io_backend::automatic || !env || !*env) return chosen;
  const std::string s(env);
  static constexpr std::pair<const char*, io_backend> names[] = {
      {"automatic", io_backend::automatic}, {"epoll", io_backend::epoll},
      {"epoll_threads", io_backend::epoll_threads}, {"io_uring", io_backend::io_uring},
      {"blocking", io_backend::blocking}};
  for (auto& [name, value] : names)
    if (s == name) return value;
  throw configuration_error("WEFT_IO must be one of automatic, epoll, epoll_threads, io_uring, "
                            "blocking; not '" + s + "'");
}

options resolve(options o) {
  // Enumerations first: a value cast from an integer (options.io =
  // io_backend(77)) must be refused here, not crash at first use.
  switch (o.policy) {
    case steal_policy::proactive:
    case steal_policy::parsimonious:
      break;
    default:
      throw configuration_error("weft::options::policy is not a weft::steal_policy value (" +
                                std::to_string(static_cast<int>(o.policy)) + ")");
  }
  switch (o.io) {
    case io_backend::automatic:
    case io_backend::epoll:
    case io_backend::io_uring:
    case io_backend::blocking:
    case io_backend::epoll_threads:
      break;
    default:
      throw configuration_error("weft::options::io is not a weft::io_backend value (" +
                                std::to_string(static_cast<int>(o.io)) + ")");
  }
  switch (o.priorities) {
    case options::priority_mode::adaptive:
    case options::priority_mode::oblivious:
      break;
    default:
      throw configuration_error(
          "weft::options::priorities is not a weft::options::priority_mode value (" +
          std::to_string(static_cast<int>(o.priorities)) + ")");
  }
  if (o.blocking_threads == 0) o.blocking_threads = default_blocking_threads;
  if (o.blocking_threads > max_blocking_threads) {
    throw configuration_error("weft::options::blocking_threads must be at most " +
                              std::to_string(max_blocking_threads) + ", not " +
                              std::to_string(o.blocking_threads));
  }
  if (o.blocking_keep_alive < std::chrono::milliseconds::zero()) {
    throw configuration_error("weft::options::blocking_keep_alive must not be negative");
  }
  if (o.shutdown_grace < std::chrono::milliseconds::zero()) {
    throw configuration_error("weft::options::shutdown_grace must not be negative");
  }
  o.io = io_from_environment(o.io);
  if (o.workers == 0) o.workers = workers_from_environment();
  if (o.workers == 0) o.workers = std::max(1u, std::thread::hardware_concurrency());
  if (o.workers > max_workers) {
    throw configuration_error("weft::options::workers must be at most " +
                              std::to_string(max_workers) + ", not " +
                              std::to_string(o.workers));
  }
  if (o.stack_size == 0) o.stack_size = default_stack;
  if (o.stack_size < min_stack || o.stack_size > max_stack) {
    throw configuration_error("weft::options::stack_size must be between 16 KiB and 1 GiB, not " +
                              std::to_string(o.stack_size) + " bytes");
  }
  if (o.aps_quantum < std::chrono::microseconds(10) || o.aps_quantum > std::chrono::seconds(10)) {
    throw configuration_error("weft::options::aps_quantum must be between 10 us and 10 s");
  }
  if (!(o.aps_efficiency > 0.0 && o.aps_efficiency <= 1.0)) {
    throw configuration_error("weft::options::aps_efficiency (delta) must be in (0, 1]");
  }
  if (!(o.aps_responsiveness >= 1.0 && o.aps_responsiveness <= 16.0)) {
    throw configuration_error("weft::options::aps_responsiveness (rho) must be in [1, 16]");
  }
  return o;
}

}  // namespace

runtime::runtime(const options& opts)
    : sched_(std::make_unique<detail::scheduler>(resolve(opts))) {}

runtime::~runtime() {
  if (detail::is_worker_of(*sched_)) {
    // Destroying a runtime from one of its own tasks would deadlock the drain.
    std::fputs("weft: fatal: a weft::runtime was destroyed by one of its own tasks\n", stderr);
    std::abort();
  }
  sched_.reset();
}

unsigned runtime::worker_count() const noexcept { return sched_->worker_count(); }
std::size_t runtime::stack_size() const noexcept { return sched_->usable_stack_size(); }
const options& runtime::configuration() const noexcept { return sched_->config(); }
runtime::statistics runtime::stats() const noexcept { return sched_->stats(); }

}  // namespace weft
