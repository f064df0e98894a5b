"""Concurrent Cilk §6.1, Figure 7: kernels perturbed by simulated network waits.

weft-bench's kernels section: the kernels on weft at the largest worker count,
with waits totalling their compute time, by weft::this_task::sleep_for (the
task suspends) and by std::this_thread::sleep_for (the worker blocks).
"""
import math
from weft_report import value_of

ORDER = 55
TITLE = "Concurrent Cilk Figure 7: kernels perturbed by simulated waits, hidden or blocking"
PAPER = "Concurrent Cilk (paper 004) §6.1, Figure 7"
SECTIONS = ["kernels"]

KERNELS = ["lu", "strassen", "blackscholes", "knapsack"]
HIDDEN = "weft + this_task::sleep_for waits"
BLOCKED = "weft + OS sleep waits"


def _first(fig, name):
    rs = [r for r in fig.rows(section="^kernels$", name="^%s$" % name.replace("+", r"\+"))]
    return rs[-1] if rs else None


def _fmt(v, unit="x"):
    return "n/a" if math.isnan(v) else ("%.2f%s" % (v, unit))


def render(fig):
    rows = fig.rows(section="^kernels$", name="sleep")
    if not rows:
        fig.missing("the kernels section was not run (weft-bench --only kernels)")
        return
    workers = rows[0].params.split(",")[1].strip() if "," in rows[0].params else "?"
    fig.text(
        "Figure 7 of Concurrent Cilk injects simulated network waits into the parallel "
        "regions of the same kernels: one leaf in 8 (pseudo-random) waits after computing, "
        "for 8x the mean compute time of a leaf (calibrated once per kernel by two unperturbed "
        "runs), so that the waits total about the compute time (half of the CPU time, as the "
        "paper's perturbations). With `weft::this_task::sleep_for` the "
        "waiting task suspends and its worker runs other leaves (the paper's `cilk_sleep`); "
        "with `std::this_thread::sleep_for` the worker thread blocks (the paper's `sleep`). "
        "If the waits are fully hidden the first takes the unperturbed time "
        "(ratio 1) and the second twice it (every worker idle for as long as it computes). "
        "Measured on weft at %s." % workers)
    table, unpert, hid, blk = [], [], [], []
    for k in KERNELS:
        us = [r for r in fig.rows(section="^kernels$", name=r"^%s weft fork_join$" % k)
              if r.params.endswith(workers)]
        u = us[-1] if us else None
        h = _first(fig, "%s %s" % (k, HIDDEN))
        b = _first(fig, "%s %s" % (k, BLOCKED))
        uv, hv, bv = value_of(u), value_of(h), value_of(b)
        unpert.append(uv)
        hid.append(hv)
        blk.append(bv)
        table.append([k, _fmt(uv, " ms"), _fmt(hv, " ms"), _fmt(bv, " ms"),
                      _fmt(hv / uv if uv > 0 else float("nan")),
                      _fmt(bv / uv if uv > 0 else float("nan")),
                      _fmt(bv / hv if hv > 0 else float("nan"))])
    fig.table(["kernel", "unperturbed", "this_task::sleep_for waits", "OS sleep waits",
               "sleep_for / unperturbed (1 = hidden)", "OS sleep / unperturbed (2 = not hidden)",
               "OS sleep / sleep_for"], table)
    fig.table(
        ["what", "paper", "weft (this run)"],
        [["waits by the runtime's sleep (cilk_sleep / this_task::sleep_for)",
          "latency hidden, cores kept busy (plot only, no numbers in the text)",
          ", ".join("%s %s" % (k, _fmt(h / u if u > 0 else float("nan")))
                    for k, u, h in zip(KERNELS, unpert, hid)) + " of unperturbed"],
         ["waits by an OS sleep (the worker blocks)",
          "slower; on Strassen more than the blocked volume predicts (random waits lengthen "
          "the critical path)",
          ", ".join("%s %s" % (k, _fmt(b / u if u > 0 else float("nan")))
                    for k, u, b in zip(KERNELS, unpert, blk)) + " of unperturbed"],
         ["perturbation", "random, 50% of the total CPU time", "pseudo-random 1 leaf in 8, "
          "waits = leaf compute time in total"]])
    if any(not math.isnan(v) for v in hid + blk):
        f, ax = fig.plot()
        width = 0.27
        for i, (label, vals, color) in enumerate([("unperturbed", unpert, "#1f77b4"),
                                                  ("this_task::sleep_for (task suspends)", hid,
                                                   "#2ca02c"),
                                                  ("OS sleep (worker blocks)", blk, "#d62728")]):
            norm = [v / u if (u > 0 and not math.isnan(v)) else 0 for v, u in zip(vals, unpert)]
            ax.bar([j + (i - 1) * width for j in range(len(KERNELS))], norm, width, label=label,
                   color=color)
        ax.axhline(2.0, color="gray", linewidth=0.6, linestyle=":")
        ax.set_xticks(range(len(KERNELS)))
        ax.set_xticklabels(KERNELS)
        ax.set_ylabel("time / unperturbed time (lower is better)")
        ax.set_title("Kernels with waits = compute time, weft at %s" % workers)
        ax.legend(fontsize="small")
        fig.save(f, "Median time with simulated waits relative to the unperturbed run (dotted: "
                    "2x, the waits not hidden at all).")
    fig.rows_table(rows)
