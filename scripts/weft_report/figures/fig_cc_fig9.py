"""Concurrent Cilk Figure 9: parallel fib on task libraries, weft's fork-join,
futures and task_group against oneTBB and OpenMP (weft-bench's fib section)."""

ORDER = 76
TITLE = "Concurrent Cilk Figure 9: parfib on task libraries, weft vs oneTBB and OpenMP"
PAPER = "Concurrent Cilk (paper 004) §6.2.2, Figure 9"
SECTIONS = ["fib"]

SYSTEMS = ["weft fork_join", "weft futures (async/get)", "weft task_group", "oneTBB task_group",
           "OpenMP tasks (smaller n)"]


def render(fig):
    from weft_report import fmt
    rows = fig.rows(section="^fib$")
    per_task = [r for r in rows if r.name in SYSTEMS]
    ratios = [r for r in rows if r.unit == "x"]
    if not per_task:
        fig.missing("the fib section's per-task rows are missing")
        return
    fig.text(
        "fib(n) without a cutoff, one task per call: the per-task cost of spawn and join, the "
        "microbenchmark of the paper's Figure 9 (parfib(40) on Cilk, TBB, OpenMP and "
        "Concurrent Cilk with and without ivars). weft-bench reports ns per task (wall time / "
        "tasks) for weft's three ways of writing it and for oneTBB and OpenMP in the same run; "
        "OpenMP runs a smaller n, being slower. The paper's figure is a plot without printed "
        "numbers; its text: the ivar version \"scales as well as TBB and raw Cilk (spawn/"
        "return), and outperforms OpenMP\"; the restricted task libraries are the fastest.")

    def r_text(name):
        rs = [r for r in ratios if r.name == name]
        return "; ".join(("%.2fx (%s)" % (r.value, r.params)) if r.ok else "n/a (%s)" % r.note
                         for r in rs) or "not run"

    fig.table(
        ["what", "paper (Figure 9, text)", "weft (this run)"],
        [["oneTBB / weft fork_join, ns per task", "TBB among the fastest",
          r_text("oneTBB / weft fork_join (ns per task)")],
         ["weft futures / fork_join (the ivar-like version against spawn/return)",
          "ivars: a small gap to TBB and raw Cilk", r_text("weft futures / fork_join (ns per task)")],
         ["weft fork_join on 1 worker / serial, per call", "(Figure 6: Concurrent Cilk's "
          "overhead on plain Cilk programs, geomean 1.1%)",
          r_text("weft fork_join (1 worker) / serial")],
         ["weft fork_join speedup, 1 -> 2 workers", "scales", r_text("weft fork_join speedup")]])
    fig.rows_table(per_task + ratios)

    groups = list(dict.fromkeys(r.params.rsplit(",", 1)[-1].strip() for r in per_task))
    f, ax = fig.plot()
    width = 0.8 / len(SYSTEMS)
    for k, system in enumerate(SYSTEMS):
        xs, ys = [], []
        for g, workers in enumerate(groups):
            r = next((r for r in per_task if r.name == system
                      and r.params.rsplit(",", 1)[-1].strip() == workers), None)
            if r is not None and r.ok:
                xs.append(g + (k - (len(SYSTEMS) - 1) / 2) * width)
                ys.append(r.value)
        if ys:
            bars = ax.bar(xs, ys, width, label=system)
            ax.bar_label(bars, [fmt(y) for y in ys], fontsize=6, padding=1)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylabel("ns per task (lower is better)")
    ax.legend(fontsize=7)
    fig.save(f, "fib without a cutoff: ns per task for each system and worker count "
                "(%s). A system without a bar was not measured (see the rows)." % (
                    ", ".join(dict.fromkeys(r.params.split(",")[0] for r in per_task))))
