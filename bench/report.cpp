// weft-bench — the result table: each row printed as it is added, the
// header and the footer (goals met and missed), and the JSON output.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench.hpp"
#include "stats.hpp"

#ifndef WEFT_BENCH_VERSION
#define WEFT_BENCH_VERSION "unknown"
#endif

namespace weft_bench {

std::string workers_param(unsigned w) {
  return std::to_string(w) + (w == 1 ? " worker" : " workers");
}

namespace {

std::string now_string() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %Z", std::localtime(&t));
  return buf;
}

// Three significant digits, no exponent.
std::string fmt_num(double v) {
  if (std::isnan(v)) return "-";
  char buf[64];
  double a = std::fabs(v);
  if (a >= 1000)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else if (a >= 100)
    std::snprintf(buf, sizeof buf, "%.1f", v);
  else if (a >= 10)
    std::snprintf(buf, sizeof buf, "%.2f", v);
  else if (a >= 0.01 || a == 0)
    std::snprintf(buf, sizeof buf, "%.3f", v);
  else
    std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string goal_string(const row& r) {
  if (r.goal == goal_kind::none) return "";
  return (r.goal == goal_kind::at_least ? ">= " : "<= ") + fmt_num(r.goal_value);
}

std::string status_string(const row& r) {
  if (r.failed) return "FAILED";
  if (!r.has_value()) return r.goal == goal_kind::none ? "" : "not measured";
  if (r.goal == goal_kind::none) return "";
  return r.goal_met() ? "goal met" : "goal missed";
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

std::string json_num(double v) {
  if (std::isnan(v) || std::isinf(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

row make_row(std::string section, std::string name, std::string params,
             std::vector<double> samples, std::string unit) {
  row r;
  r.section = std::move(section);
  r.name = std::move(name);
  r.params = std::move(params);
  r.value = samples.empty() ? NAN : median(samples);
  r.samples = std::move(samples);
  r.unit = std::move(unit);
  return r;
}

void report::print_header(const config& cfg) {
  load_at_start_ = load_average();
  std::printf("weft-bench %s - weft runtime benchmark suite\n", WEFT_BENCH_VERSION);
  std::printf("  date      %s\n", now_string().c_str());
  std::printf("  machine   %u online CPUs (nproc), %s; %s; load average %s\n", online_cpus(),
              cpu_model().c_str(), kernel_string().c_str(), load_at_start_.c_str());
  std::printf("  compiler  %s; build type %s\n", compiler_string().c_str(),
              build_type_string().c_str());
  std::printf("  baselines %s; %s\n", tbb_string().c_str(), openmp_string().c_str());
  std::printf("  mode      %s: each figure is the median of %d timed repetitions after %d "
              "warm-up; wall time from steady_clock\n",
              cfg.quick ? "quick" : "full", cfg.reps, cfg.warmup);
  std::printf("  columns   median and best (fastest) repetition; spread = (max - min) / median; "
              "goals are judged on the median\n");
  double load1 = std::atof(load_at_start_.c_str());
  if (load1 > 0.5 * online_cpus())
    std::printf("  WARNING   the machine is busy (1-min load %.2f on %u CPUs): expect noisy "
                "figures, especially with 2 workers\n",
                load1, online_cpus());
  std::printf("\n");
  std::printf("%-9s %-42s %-40s %10s %10s %-9s %6s  %-8s %-12s %s\n", "section",
              "measurement", "parameters", "median", "best", "unit", "spread", "goal", "status",
              "notes");
  std::printf("%s\n", std::string(160, '-').c_str());
  std::fflush(stdout);
}

void report::print_row(const row& r) const {
  std::string spread_s, best_s;
  if (r.has_value() && r.samples.size() > 1) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.0f%%", 100 * spread(r.samples));
    spread_s = buf;
    // The best repetition: on a shared machine the least disturbed one.
    best_s = fmt_num(r.higher_is_better ? max_of(r.samples) : min_of(r.samples));
  }
  std::printf("%-9s %-42s %-40s %10s %10s %-9s %6s  %-8s %-12s %s\n", r.section.c_str(),
              r.name.c_str(), r.params.c_str(), r.has_value() ? fmt_num(r.value).c_str() : "n/a",
              best_s.c_str(), r.has_value() ? r.unit.c_str() : "", spread_s.c_str(),
              goal_string(r).c_str(), status_string(r).c_str(), r.note.c_str());
  std::fflush(stdout);
}

void report::add(row r) {
  print_row(r);
  rows_.push_back(std::move(r));
}

void report::add_missing(std::string section, std::string name, std::string params,
                         std::string note, bool failed) {
  row r;
  r.section = std::move(section);
  r.name = std::move(name);
  r.params = std::move(params);
  r.note = std::move(note);
  r.failed = failed;
  add(std::move(r));
}

void report::add_ratio(std::string section, std::string name, std::string params, const row* num,
                       const row* den, goal_kind goal, double goal_value, std::string note) {
  row r;
  r.section = std::move(section);
  r.name = std::move(name);
  r.params = std::move(params);
  r.unit.push_back('x');  // not = "x": GCC 12 -Wrestrict false positive (PR 105329)
  r.goal = goal;
  r.goal_value = goal_value;
  r.note = std::move(note);
  if (num && den && num->has_value() && den->has_value() && den->value > 0) {
    r.value = num->value / den->value;
  } else {
    const row* missing = (!num || !num->has_value()) ? num : den;
    std::string why = missing && !missing->note.empty() ? missing->note : "an input is missing";
    r.note = why.rfind("n/a", 0) == 0 ? why : "n/a (" + why + ")";
  }
  add(std::move(r));
}

const row* report::find(const std::string& section, const std::string& name,
                        const std::string& params) const {
  for (auto it = rows_.rbegin(); it != rows_.rend(); ++it)
    if (it->section == section && it->name == name && it->params == params) return &*it;
  return nullptr;
}

bool report::any_failed() const {
  for (const auto& r : rows_)
    if (r.failed) return true;
  return false;
}

void report::print_footer() const {
  int met = 0, missed = 0, unmeasured = 0;
  for (const auto& r : rows_) {
    if (r.goal == goal_kind::none) continue;
    if (!r.has_value() || r.failed)
      ++unmeasured;
    else if (r.goal_met())
      ++met;
    else
      ++missed;
  }
  std::printf("%s\n", std::string(160, '-').c_str());
  std::printf("load average at the end: %s\n", load_average().c_str());
  std::printf("goals: %d met, %d missed, %d not measured\n", met, missed, unmeasured);
  for (const auto& r : rows_) {
    if (r.goal == goal_kind::none) continue;
    std::printf("  %-12s %s: %s (%s) %s %s %s\n", status_string(r).c_str(), r.section.c_str(),
                r.name.c_str(), r.params.c_str(),
                r.has_value() ? fmt_num(r.value).c_str() : "n/a",
                r.has_value() ? r.unit.c_str() : "",
                goal_string(r).c_str());
  }
  for (const auto& r : rows_) {
    if (r.failed)
      std::printf("FAILED: %s: %s (%s): %s\n", r.section.c_str(), r.name.c_str(),
                  r.params.c_str(), r.note.c_str());
  }
}

bool report::write_json(const std::string& path, const config& cfg) const {
  std::ostringstream o;
  o << "{\n  \"tool\": \"weft-bench\",\n  \"version\": \"" << json_escape(WEFT_BENCH_VERSION)
    << "\",\n  \"date\": \"" << json_escape(now_string()) << "\",\n  \"mode\": \""
    << (cfg.quick ? "quick" : "full") << "\",\n  \"reps\": " << cfg.reps
    << ",\n  \"warmup\": " << cfg.warmup << ",\n  \"machine\": {\"cpus\": " << online_cpus()
    << ", \"cpu_model\": \"" << json_escape(cpu_model()) << "\", \"kernel\": \""
    << json_escape(kernel_string()) << "\", \"compiler\": \"" << json_escape(compiler_string())
    << "\", \"build_type\": \"" << json_escape(build_type_string()) << "\", \"onetbb\": \""
    << json_escape(tbb_string()) << "\", \"openmp\": \"" << json_escape(openmp_string())
    << "\", \"load_average_start\": \"" << json_escape(load_at_start_)
    << "\", \"load_average_end\": \"" << json_escape(load_average()) << "\"},\n  \"rows\": [";
  bool first = true;
  for (const auto& r : rows_) {
    o << (first ? "\n" : ",\n");
    first = false;
    o << "    {\"section\": \"" << json_escape(r.section) << "\", \"name\": \""
      << json_escape(r.name) << "\", \"params\": \"" << json_escape(r.params)
      << "\", \"value\": " << json_num(r.value) << ", \"unit\": \"" << json_escape(r.unit)
      << "\", \"samples\": [";
    for (std::size_t i = 0; i < r.samples.size(); ++i)
      o << (i ? ", " : "") << json_num(r.samples[i]);
    o << "], \"note\": \"" << json_escape(r.note) << "\", \"goal\": ";
    if (r.goal == goal_kind::none) {
      o << "null";
    } else {
      o << "{\"kind\": \"" << (r.goal == goal_kind::at_least ? "at_least" : "at_most")
        << "\", \"value\": " << json_num(r.goal_value) << ", \"met\": "
        << (r.has_value() && !r.failed ? (r.goal_met() ? "true" : "false") : "null") << "}";
    }
    o << ", \"failed\": " << (r.failed ? "true" : "false") << "}";
  }
  o << "\n  ],\n  \"failed\": " << (any_failed() ? "true" : "false") << "\n}\n";
  std::ofstream out(path);
  out << o.str();
  return static_cast<bool>(out);
}

}  // namespace weft_bench
