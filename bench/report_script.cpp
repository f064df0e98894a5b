// weft-bench --report DIR: after the run, scripts/weft-report turns
// DIR/results.json into DIR/index.md and its SVG plots (docs/report.md). The
// script's path is compiled in (WEFT_BENCH_REPORT_SCRIPT, bench/CMakeLists.txt);
// the interpreter is the first of /usr/bin/python3 (where Debian's
// python3-matplotlib installs) and python3 on PATH that imports matplotlib.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench.hpp"

extern char** environ;

namespace weft_bench {
namespace {

// Runs argv (argv[0] searched on PATH); its exit status, or -1 when it could
// not be started or did not exit normally. quiet: stdout and stderr to /dev/null.
int run_command(const std::vector<std::string>& args, bool quiet) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (quiet) {
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  std::fflush(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::string report_script_path() { return WEFT_BENCH_REPORT_SCRIPT; }

std::string report_python() {
  for (const char* py : {"/usr/bin/python3", "python3"})
    if (run_command({py, "-c", "import matplotlib"}, true) == 0) return py;
  return "";
}

int run_report_script(const std::string& python, const std::string& results_json,
                      const std::string& dir) {
  std::printf("weft-bench: %s %s %s %s\n", python.c_str(), report_script_path().c_str(),
              results_json.c_str(), dir.c_str());
  return run_command({python, report_script_path(), results_json, dir}, false);
}

}  // namespace weft_bench
