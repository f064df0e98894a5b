"""Fibertures Figure 3.11: the cost of creating a task, a weft::async against a
std::thread and std::async (weft-bench's spawn section)."""

ORDER = 74
TITLE = "Fibertures Figure 3.11: task creation, weft::async vs std::thread and std::async"
PAPER = "Fibertures (paper 003) §3, Figure 3.11"
SECTIONS = ["spawn"]

# Figure 3.11: mean task creation time (ns): STL thread, and libfib fibers by worker count.
PAPER_THREAD_NS = 3230
PAPER_FIBER_NS = {2: 185, 4: 262, 8: 332, 16: 655}


def render(fig):
    from weft_report import fmt
    rows = fig.rows(section="^spawn$")
    weft = [r for r in rows if r.name.startswith("weft::async") and r.unit.startswith("ns")]
    std = [r for r in rows if r.name.startswith("std::")]
    ratios = [r for r in rows if r.unit == "x" and " / weft::async" in r.name]
    if not weft:
        fig.missing("the spawn section's weft::async rows are missing")
        return
    fig.text(
        "The cost of creating a task and getting its result: `weft::async` + `get` (a task "
        "record; a fiber only if the task blocks) against `std::thread` create + join and "
        "`std::async(launch::async)` + `get` (a thread per task), as Fibertures' Figure 3.11 "
        "compares STL threads with its fibers. weft-bench reports ns per task; the paper's "
        "ratio is thread / fiber creation time.")

    def ratio_text(name):
        r = next((r for r in ratios if r.name == name), None)
        if r is None:
            return "not run"
        return ("%.0fx (%s)" % (r.value, r.params)) if r.ok else "n/a (%s)" % r.note

    fig.table(
        ["what", "paper", "weft (this run)"],
        [["std::thread / task creation time",
          "%s ns / %s ns = %.0fx (fibers on 2 threads); %.0fx on 16" % (
              fmt(PAPER_THREAD_NS), PAPER_FIBER_NS[2], PAPER_THREAD_NS / PAPER_FIBER_NS[2],
              PAPER_THREAD_NS / PAPER_FIBER_NS[16]),
          ratio_text("std::thread / weft::async")],
         ["std::async / task creation time", "(std::async not measured; STL thread above)",
          ratio_text("std::async / weft::async")],
         ["task creation (weft: newest first), by workers", ", ".join("%d threads: %d ns" % kv
                                                 for kv in PAPER_FIBER_NS.items()),
          "; ".join("%s: %s" % (r.params, fmt(r.value, r.unit)) for r in weft
                    if r.ok and "newest first" in r.name) or "n/a"]])
    fig.rows_table(weft + std + ratios)

    drawn = [r for r in weft + std if r.ok and r.unit.startswith("ns")]
    if drawn:
        f, ax = fig.plot(figsize=(8.0, 0.35 * len(drawn) + 1.5))
        bars = ax.barh(range(len(drawn)), [r.value for r in drawn],
                       color=["tab:green" if r.name.startswith("weft") else "tab:gray"
                              for r in drawn])
        ax.bar_label(bars, [fmt(r.value) for r in drawn], padding=2, fontsize=7)
        ax.set_yticks(range(len(drawn)), ["%s  [%s]" % (r.name, r.params) for r in drawn],
                      fontsize=7)
        ax.invert_yaxis()
        ax.set_xscale("log")
        for n, ns in PAPER_FIBER_NS.items():
            ax.axvline(ns, color="tab:blue", linestyle=":", linewidth=0.7)
        ax.axvline(PAPER_THREAD_NS, color="tab:red", linestyle="--", linewidth=0.8,
                   label="paper: STL thread 3,230 ns")
        ax.axvline(PAPER_FIBER_NS[2], color="tab:blue", linestyle=":", linewidth=0.7,
                   label="paper: libfib fiber, 2-16 threads (185-655 ns)")
        ax.legend(fontsize=7, loc="lower right")
        ax.set_xlabel("ns per task (log scale; lower is better)")
        fig.save(f, "Task creation cost: weft::async (green) against a thread per task (gray), "
                    "with the paper's STL thread (red) and libfib fiber times (blue) for "
                    "orientation only (another machine).")
