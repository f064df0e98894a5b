// weft-bench — memory: peak resident set of weft workloads.
//
// Each workload runs in its own child process (weft-bench re-executes itself
// with the hidden `--child KIND` argument), so peaks never mix:
//   mem-baseline  a runtime that runs one empty task
//   mem-fib       fib(32) with futures (async/get)
//   mem-blocked   100,000 tasks blocked at once, each on its own ivar, then
//                 released; twice, the second time on recycled fibers
// The child prints key=value lines: its peak RSS as VmHWM (the high-water
// mark of its address space since exec) and as getrusage's ru_maxrss. The
// table uses VmHWM: Linux carries ru_maxrss across execve, so a child's
// ru_maxrss is at least the parent's RSS at fork time.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <weft/weft.hpp>

#include "bench.hpp"
#include "stats.hpp"

namespace weft_bench {
namespace {

constexpr long blocked_tasks = 100'000;
constexpr int fib_n = 32;

// ---------------------------------------------------------------- child side

long status_kib(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::size_t len = std::strlen(key);
  while (std::getline(in, line)) {
    if (line.compare(0, len, key) == 0 && line.size() > len && line[len] == ':')
      return std::stol(line.substr(len + 1));
  }
  return -1;
}

void print_peaks() {
  long hwm = status_kib("VmHWM");
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("vm_hwm_kib=%ld\n", hwm);
  std::printf("ru_maxrss_kib=%ld\n", ru.ru_maxrss);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int child_baseline(unsigned workers) {
  weft::runtime rt{weft::options{.workers = workers}};
  int r = rt.run([] { return 7; });
  std::printf("ok=%d\n", r == 7);
  std::printf("fibers_created=%zu\n", rt.stats().fibers_created);
  print_peaks();
  return r == 7 ? 0 : 1;
}

int child_fib(unsigned workers) {
  weft::runtime rt{weft::options{.workers = workers}};
  volatile int n = fib_n;
  auto t0 = std::chrono::steady_clock::now();
  long r = rt.run([k = static_cast<int>(n)] { return fib_weft_futures(k); });
  std::printf("seconds=%.6f\n", seconds_since(t0));
  bool ok = r == fib_reference(fib_n);
  std::printf("ok=%d\n", ok);
  std::printf("fibers_created=%zu\n", rt.stats().fibers_created);
  print_peaks();
  return ok ? 0 : 1;
}

struct blocked_round {
  double block_s = 0, release_s = 0;
  long rss_while_blocked_kib = 0;
  bool ok = false;
};

// Blocks `blocked_tasks` asyncs at once, each on its own ivar, then releases
// them. The first round creates the fibers (cold stacks); later rounds reuse
// them from the runtime's pool.
blocked_round block_and_release(weft::runtime& rt) {
  blocked_round res;
  std::unique_ptr<weft::ivar<long>[]> gates(new weft::ivar<long>[blocked_tasks]);
  std::vector<weft::future<long>> fs;
  fs.reserve(blocked_tasks);
  res.ok = rt.run([&] {
    weft::ivar<int> all_started;
    std::atomic<long> started{0};
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < blocked_tasks; ++i) {
      fs.push_back(weft::async([&, i] {
        // The last task to start wakes the root just before blocking itself.
        if (started.fetch_add(1, std::memory_order_relaxed) + 1 == blocked_tasks)
          all_started.put(1);
        return gates[i].get();
      }));
    }
    all_started.get();
    res.block_s = seconds_since(t0);
    res.rss_while_blocked_kib = status_kib("VmRSS");
    auto t1 = std::chrono::steady_clock::now();
    for (long i = 0; i < blocked_tasks; ++i) gates[i].put(i);
    long sum = 0;
    for (long i = blocked_tasks - 1; i >= 0; --i) sum += fs[static_cast<std::size_t>(i)].get();
    res.release_s = seconds_since(t1);
    return sum == blocked_tasks * (blocked_tasks - 1) / 2;
  });
  return res;
}

int child_blocked(unsigned workers) {
  weft::runtime rt{weft::options{.workers = workers}};
  blocked_round cold = block_and_release(rt);
  blocked_round warm = block_and_release(rt);
  std::printf("block_seconds=%.6f\n", cold.block_s);
  std::printf("release_seconds=%.6f\n", cold.release_s);
  std::printf("warm_block_seconds=%.6f\n", warm.block_s);
  std::printf("warm_release_seconds=%.6f\n", warm.release_s);
  std::printf("rss_while_blocked_kib=%ld\n", cold.rss_while_blocked_kib);
  const bool ok = cold.ok && warm.ok;
  std::printf("ok=%d\n", ok);
  std::printf("fibers_created=%zu\n", rt.stats().fibers_created);
  print_peaks();
  return ok ? 0 : 1;
}

// --------------------------------------------------------------- parent side

child_result run_child(const config& cfg, const std::string& kind, unsigned workers,
                       std::chrono::seconds limit) {
  return run_process({cfg.self_exe, "--child", kind, "--workers", std::to_string(workers)}, limit,
                     "child '" + kind + "'");
}

// Runs cfg.reps children of one kind; the median peak (MiB) and the last
// child's other figures. Adds a failed row and returns false on error.
bool measure_kind(const config& cfg, report& rep, const std::string& kind, const std::string& name,
                  const std::string& params, unsigned workers, row& out,
                  child_result& last) {
  std::vector<double> mib;
  for (int i = 0; i < cfg.reps; ++i) {
    child_result c = run_child(cfg, kind, workers, std::chrono::seconds(cfg.quick ? 60 : 120));
    if (!c.ok) {
      rep.add_missing("memory", name, params, c.error, true);
      return false;
    }
    mib.push_back(c.num("vm_hwm_kib") / 1024.0);
    last = std::move(c);
  }
  out = make_row("memory", name, params, mib, "MiB");
  return true;
}

void add_delta(report& rep, const std::string& name, const std::string& params, const row& a,
               const row& base, const std::string& note) {
  row d = make_row("memory", name, params, {a.value - base.value}, "MiB");
  d.note = note;
  rep.add(std::move(d));
}

}  // namespace

long proc_status_kib(pid_t pid, const char* key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  const std::size_t len = std::strlen(key);
  while (std::getline(in, line))
    if (line.compare(0, len, key) == 0 && line.size() > len && line[len] == ':')
      return std::stol(line.substr(len + 1));
  return -1;
}

std::string go_build(const std::string& source, const std::string& dir,
                     const std::string& exe_name) {
  if (std::system("command -v go >/dev/null 2>&1") != 0) return "not measured: go not found";
  if (std::system(("mkdir -p '" + dir + "'").c_str()) != 0)
    return "not measured: cannot create " + dir;
  const std::string exe = dir + "/" + exe_name;
  const std::string cmd = "cd '" + dir + "' && GO111MODULE=off GOFLAGS= GOCACHE='" + dir +
                          "/cache' GOPATH='" + dir + "/gopath' go build -o '" + exe + "' '" +
                          source + "' >'" + dir + "/build.log' 2>&1";
  if (std::system(cmd.c_str()) != 0 || ::access(exe.c_str(), X_OK) != 0)
    return "not measured: go build failed (see " + dir + "/build.log)";
  return "";
}

child_result run_process(std::vector<std::string> args, std::chrono::seconds limit,
                         const std::string& what) {
  child_result res;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    res.error = std::string("pipe: ") + std::strerror(errno);
    return res;
  }
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    res.error = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return res;
  }
  if (pid == 0) {  // only async-signal-safe calls until exec
    dup2(fds[1], STDOUT_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);

  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bool timed_out = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int pr = poll(&p, 1, static_cast<int>(std::min<long>(left.count(), 1000)));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    char buf[4096];
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the child exited (or closed stdout)
    out.append(buf, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

  std::size_t pos = 0;
  while (pos < out.size()) {
    std::size_t nl = out.find('\n', pos);
    std::string line = out.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? out.size() : nl + 1;
    std::size_t eq = line.find('=');
    if (eq != std::string::npos) res.values[line.substr(0, eq)] = line.substr(eq + 1);
  }

  if (timed_out) {
    res.error = "HANG: " + what + " killed after " + std::to_string(limit.count()) + " s";
  } else if (WIFSIGNALED(status)) {
    res.error = "CRASH: " + what + " died of signal " + std::to_string(WTERMSIG(status)) +
                " (" + strsignal(WTERMSIG(status)) + ")";
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    res.error = what + " exited with status " +
                std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    if (res.values.count("ok") && res.values["ok"] == "0") res.error = "WRONG RESULT in " + what;
  } else if (!res.values.count("vm_hwm_kib")) {
    res.error = what + " printed no peak RSS";
  } else {
    res.ok = true;
  }
  return res;
}


int memory_child(const std::string& kind, unsigned workers) {
  if (kind.rfind("sync-", 0) == 0) return sync_child(kind, workers);
  try {
    if (kind == "mem-baseline") return child_baseline(workers);
    if (kind == "mem-fib") return child_fib(workers);
    if (kind == "mem-blocked") return child_blocked(workers);
    std::fprintf(stderr, "weft-bench: unknown child kind '%s'\n", kind.c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft-bench child %s: error: %s\n", kind.c_str(), e.what());
    return 3;
  }
}

void run_memory(const config& cfg, report& rep) {
  const unsigned w = cfg.workers.back();
  const std::string wp = workers_param(w);
  row base, fib, blocked;
  child_result base_c, fib_c, blocked_c;

  bool have_base = measure_kind(cfg, rep, "mem-baseline", "peak RSS, runtime only (baseline)",
                                wp, w, base, base_c);
  if (have_base) {
    base.note = "VmHWM; ru_maxrss " + base_c.values["ru_maxrss_kib"] +
                " KiB (includes the parent's RSS at fork)";
    rep.add(base);
  }

  const std::string fib_params = "fib(" + std::to_string(fib_n) + "), " + wp;
  if (measure_kind(cfg, rep, "mem-fib", "peak RSS, futures", fib_params, w, fib, fib_c)) {
    fib.note = "fibers created " + fib_c.values["fibers_created"] + ", run " +
               fib_c.values["seconds"] + " s";
    rep.add(fib);
    if (have_base) add_delta(rep, "  increase over baseline", fib_params, fib, base, "");
  }

  const std::string blocked_params = std::to_string(blocked_tasks) + " tasks, " + wp;
  if (measure_kind(cfg, rep, "mem-blocked", "peak RSS, tasks blocked on ivars", blocked_params, w,
                   blocked, blocked_c)) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "fibers created %s; block %.3g s, release %.3g s (cold); %.3g s, %.3g s (warm)",
                  blocked_c.values["fibers_created"].c_str(), blocked_c.num("block_seconds"),
                  blocked_c.num("release_seconds"), blocked_c.num("warm_block_seconds"),
                  blocked_c.num("warm_release_seconds"));
    blocked.note = buf;
    rep.add(blocked);
    if (have_base) {
      add_delta(rep, "  increase over baseline", blocked_params, blocked, base,
                "includes the ivar array and the futures");
      row per = make_row("memory", "  bytes per blocked task", blocked_params,
                         {(blocked.value - base.value) * 1024.0 * 1024.0 / blocked_tasks}, "B");
      rep.add(std::move(per));
    }
  }
}

}  // namespace weft_bench
