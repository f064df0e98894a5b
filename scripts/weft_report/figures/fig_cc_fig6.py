"""Concurrent Cilk §6.1, Figure 6: plain Cilk kernels must not pay for blocking.

weft-bench's kernels section: LU, Strassen, Black-Scholes and Knapsack
(examples/apps/kernels), serial, on weft fork-join and on oneTBB at 1 and 2
workers in one run.
"""
import math

ORDER = 50
TITLE = "Concurrent Cilk Figure 6: LU, Strassen, Black-Scholes, Knapsack vs serial and oneTBB"
PAPER = "Concurrent Cilk (paper 004) §6.1, Figure 6"
SECTIONS = ["kernels"]

KERNELS = ["lu", "strassen", "blackscholes", "knapsack"]


def _workers(params):
    """'n=512, 2 workers' -> '2 workers' (the part after the last comma)."""
    return params.rsplit(",", 1)[-1].strip()


def _ratio(r):
    if r is None:
        return "not run"
    if not r.ok:
        return "n/a (%s)" % (r.note or "not measured")
    s = "%.3fx" % r.value
    if r.goal:
        s += " (%s)" % r.status()
    return s


def _geomean(xs):
    xs = [x for x in xs if x > 0 and not math.isnan(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def render(fig):
    rows = fig.rows(section="^kernels$")
    if not rows:
        fig.missing("the kernels section was not run (weft-bench --only kernels)")
        return
    fig.text(
        "Concurrent Cilk's first question (§6.1, \"do no harm\"): does the machinery that lets "
        "a task block (fibers, suspension, the I/O layer) slow down ordinary fork-join programs "
        "that never block? The paper ran four Cilk regression kernels on Cilk with and without "
        "its changes. weft has no \"without\", so the kernels "
        "(`examples/apps/kernels`, `cilk_kernels`) run here three ways with the same leaves: "
        "the **serial elision** (every fork a call), **weft** fork-join "
        "(`weft::fork_join`, `weft::parallel_for`) and **oneTBB** (`tbb::parallel_invoke`, "
        "`tbb::parallel_for` in a `tbb::task_arena` of the same size), at 1 and 2 workers, "
        "in one run, medians of the repetitions. Goals: weft / oneTBB ≤ 1.0 per kernel and "
        "worker count, and weft on 1 worker / serial ≤ 1.1 (the overhead of the runtime "
        "itself). Ratios below 1 favour weft. Each result is checked (LU: L·U against A; "
        "Strassen: sampled entries against a naive product; Black-Scholes: parity and the serial "
        "prices; Knapsack: a dynamic program). The configurations' runs are interleaved (one of "
        "each in turn), so that the load of a shared machine falls on all alike; still, on a "
        "loaded machine the wall times stretch unpredictably, so the serial and 1-worker runs also "
        "report the "
        "CPU time of the thread running the work, whose ratio shows the runtime's own overhead more steadily.")

    table = []
    over_serial, over_tbb = [], []
    for k in KERNELS:
        one = fig.rows(section="^kernels$", name=r"^%s weft 1 worker / serial$" % k)
        one_cpu = fig.rows(section="^kernels$", name=r"^%s weft 1 worker / serial \(CPU time\)$" % k)
        vs_tbb = fig.rows(section="^kernels$", name=r"^%s weft / oneTBB$" % k)
        vs_tbb_cpu = fig.rows(section="^kernels$", name=r"^%s weft / oneTBB \(CPU time\)$" % k)
        over_serial += [r.value for r in one if r.ok]
        over_tbb += [r.value for r in vs_tbb if r.ok]
        table.append([k, _ratio(one[0] if one else None), _ratio(one_cpu[0] if one_cpu else None),
                      "; ".join("%s: %s" % (_workers(r.params), _ratio(r)) for r in vs_tbb)
                      or "not run", _ratio(vs_tbb_cpu[0] if vs_tbb_cpu else None)])
    table.append(["geometric mean", "%.3fx" % _geomean(over_serial) if over_serial else "n/a", "",
                  "%.3fx" % _geomean(over_tbb) if over_tbb else "n/a", ""])
    fig.table(["kernel", "weft 1 worker / serial (goal ≤ 1.1)", "the same in CPU time",
               "weft / oneTBB (goal ≤ 1.0)", "weft / oneTBB, 1 worker, CPU time"], table)
    fig.table(
        ["what", "paper (Concurrent Cilk / Cilk)", "weft (this run)"],
        [["slowdown over the kernels and thread counts, geometric mean",
          "1.011 (1.1% slowdown); all but two of the configurations show no overhead",
          "weft / oneTBB %s; weft 1 worker / serial %s" % (
              "%.3fx" % _geomean(over_tbb) if over_tbb else "n/a",
              "%.3fx" % _geomean(over_serial) if over_serial else "n/a")],
         ["kernels and sizes", "LU 2048x2048, Strassen 2048x2048, Black-Scholes, "
          "Knapsack 30 items (branch and bound)",
          ", ".join(sorted({"%s %s" % (r.name.split()[0], r.params)
                            for r in fig.rows(section="^kernels$", name=r" serial$")}))],
         ["machine", "4 x 8-core Xeon E7-4830, up to 32 threads",
          "%s, %s CPUs (absolute times not comparable; ratios are)" % (
              fig.machine.get("cpu_model", "?"), fig.machine.get("cpus", "?"))]])

    # Plot: each kernel's times relative to its serial time.
    series = [("weft fork_join", "1 worker"), ("oneTBB", "1 worker"),
              ("weft fork_join", "2 workers"), ("oneTBB", "2 workers")]
    values = {s: [] for s in series}
    drawn = False
    for k in KERNELS:
        serial = [r for r in fig.rows(section="^kernels$", name=r"^%s serial$" % k) if r.ok]
        for impl, w in series:
            r = [x for x in fig.rows(section="^kernels$", name=r"^%s %s$" % (k, impl))
                 if x.ok and _workers(x.params) == w]
            v = r[0].value / serial[0].value if (r and serial and serial[0].value > 0) else float("nan")
            drawn = drawn or not math.isnan(v)
            values[(impl, w)].append(v)
    if drawn:
        f, ax = fig.plot()
        width = 0.2
        colors = ["#1f77b4", "#ff7f0e", "#aec7e8", "#ffbb78"]
        for i, s in enumerate(series):
            xs = [j + (i - 1.5) * width for j in range(len(KERNELS))]
            ax.bar(xs, [0 if math.isnan(v) else v for v in values[s]], width,
                   label="%s, %s" % s, color=colors[i])
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.axhline(0.5, color="gray", linewidth=0.6, linestyle=":")
        ax.set_xticks(range(len(KERNELS)))
        ax.set_xticklabels(KERNELS)
        ax.set_ylabel("time / serial time (lower is better)")
        ax.set_title("Cilk kernels: weft and oneTBB against the serial elision")
        ax.legend(fontsize="small")
        fig.save(f, "Median time of each kernel relative to its serial elision, weft fork-join and "
                    "oneTBB at 1 and 2 workers (dashed: serial; dotted: perfect 2-worker speedup).")
    # Plot: the 1-worker ratios in CPU time (steadier on a loaded machine).
    cpu = {}
    for k in KERNELS:
        for label, pat in (("weft / serial", r"^%s weft 1 worker / serial \(CPU time\)$"),
                           ("weft / oneTBB", r"^%s weft / oneTBB \(CPU time\)$")):
            r = [x for x in fig.rows(section="^kernels$", name=pat % k) if x.ok]
            cpu.setdefault(label, []).append(r[0].value if r else float("nan"))
    if any(not math.isnan(v) for vals in cpu.values() for v in vals):
        f, ax = fig.plot()
        width = 0.35
        for i, (label, vals) in enumerate(cpu.items()):
            ax.bar([j + (i - 0.5) * width for j in range(len(KERNELS))],
                   [0 if math.isnan(v) else v for v in vals], width, label=label + ", 1 worker")
        ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.axhline(1.1, color="gray", linewidth=0.6, linestyle=":")
        ax.set_xticks(range(len(KERNELS)))
        ax.set_xticklabels(KERNELS)
        ax.set_ylabel("CPU-time ratio (lower is better)")
        ax.set_title("One worker, CPU time of the thread running the work")
        ax.legend(fontsize="small")
        fig.save(f, "weft on one worker against the serial elision and against oneTBB on one "
                    "thread, in CPU time (dashed: equal; dotted: the 1.1x goal).")
    fig.rows_table([r for r in rows if not r.name.startswith(tuple(
        "%s weft + " % k for k in KERNELS)) and "sleep" not in r.name])
