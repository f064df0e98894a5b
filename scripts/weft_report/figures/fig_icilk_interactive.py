"""I-Cilk §5.2 in a small program: an interactive service (a level-0 loopback TCP handler)
under a level-6 parallel background, APS against the priority-oblivious scheduler
(weft-bench's priority.interactive part)."""

import math
import re
from weft_report import workers_of, value_of

ORDER = 15
TITLE = "I-Cilk responsiveness: an interactive service under background load, APS vs oblivious"
PAPER = "I-Cilk (paper 001) §5.2, Figure 6 (the email client's resp row, 30 users)"
SECTIONS = ["priority.interactive"]

# Figure 6, resp (us), 30 users, 10 cores: (avg, p95, p99).
PAPER_RESP = {"I-Cilk": (46.91, 125.11, 500.72), "Cilk-F": (486.00, 344.58, 7433.00)}
KINDS = ("APS", "APS L=100us", "oblivious", "no background")
PCTS = ("p50", "p95", "p99")


def render(fig):
    from weft_report import fmt
    resp = fig.rows(section="^priority$", name=r"^interactive p\d\d response, ")
    ratios = fig.rows(section="^priority$", name=r"^interactive p\d\d APS / oblivious$")
    tput = fig.rows(section="^priority$", name=r"^interactive background throughput")
    if not resp:
        fig.missing("the priority section's interactive part (weft-bench --only "
                    "priority.interactive) was not run")
        return
    fig.text(
        "A loopback TCP service written as weft tasks: a level-0 handler reads a 16-byte "
        "request (`weft::io::read_exact`), computes serial fib(22) (about 0.1 ms) and "
        "replies, while a level-6 background computes parallel fib(27) in a loop, yielding "
        "at every leaf, enough to keep every worker busy. A client thread outside the runtime "
        "sends the requests one at a time with a random 0-1 ms think time and times each "
        "response. The same session runs under APS (L = 500 us and 100 us), under the "
        "priority-oblivious scheduler, and with no background (the floor: network and "
        "compute). The paper's email client is larger (5 levels, 10 cores, 30-120 users); "
        "the comparable quantity is the ratio of the urgent level's response times, I-Cilk "
        "over Cilk-F. Goal (issue 12): APS's p50, p95 and p99 at most 0.5x the oblivious "
        "scheduler's at 1 and 2 workers, with the background's throughput within 5%. "
        "This machine has 2 cores shared with other jobs: tails (p95, p99) include the "
        "operating system's scheduling of the workers, the client and other processes "
        "(see the report's header for the load); ratios are taken per repetition, the APS "
        "and oblivious sessions of a repetition running back to back.")

    paper_ratio = [PAPER_RESP["I-Cilk"][i] / PAPER_RESP["Cilk-F"][i] for i in range(3)]
    table = []
    for i, pc in enumerate(PCTS):
        for r in ratios:
            if not r.name.startswith("interactive %s " % pc):
                continue
            goal = ""
            if r.goal:
                met = r.goal.get("met")
                goal = "<= %s: %s" % (fmt(r.goal.get("value")),
                                      "met" if met else ("missed" if met is False else "n/a"))
            table.append(["%s (%s; paper: %s)" % (pc, r.params, "avg" if i == 0 else pc),
                          "%.2fx (%s vs %s us)" % (paper_ratio[i], fmt(PAPER_RESP["I-Cilk"][i]),
                                                   fmt(PAPER_RESP["Cilk-F"][i])),
                          fmt(value_of(r)) + "x", goal])
    for r in tput:
        goal = ""
        if r.goal:
            met = r.goal.get("met")
            goal = ">= %s: %s" % (fmt(r.goal.get("value")),
                                  "met" if met else ("missed" if met is False else "n/a"))
        table.append(["background throughput (%s)" % r.params, "(not reported)",
                      fmt(value_of(r)) + "x", goal])
    fig.table(["urgent-level response, APS / oblivious", "paper I-Cilk / Cilk-F (Fig. 6, resp, "
               "30 users)", "weft (this run)", "goal"], table)
    fig.rows_table(resp + ratios + tput)

    counts = sorted({workers_of(r.params) for r in resp} - {None})
    if not counts:
        return
    f, axes = fig.plot(ncols=len(counts), figsize=(4.2 * len(counts), 3.8))
    if not hasattr(axes, "__len__"):
        axes = [axes]
    colors = {"APS": "tab:blue", "APS L=100us": "tab:cyan", "oblivious": "tab:gray",
              "no background": "tab:green"}
    width = 0.8 / len(KINDS)
    for ax, w in zip(axes, counts):
        for j, kind in enumerate(KINDS):
            ys = []
            for pc in PCTS:
                r = next((r for r in resp if r.name == "interactive %s response, %s" % (pc, kind)
                          and workers_of(r.params) == w), None)
                ys.append(value_of(r))
            xs = [i + (j - (len(KINDS) - 1) / 2) * width for i in range(3)]
            bars = ax.bar(xs, ys, width, color=colors[kind], label=kind)
            ax.bar_label(bars, ["" if math.isnan(y) else fmt(y) for y in ys], fontsize=5,
                         padding=1, rotation=90)
        ax.set_yscale("log")
        ax.set_xticks(range(3), PCTS)
        ax.set_title("%d worker%s" % (w, "" if w == 1 else "s"), fontsize=9)
        ax.set_ylabel("response time (us, log scale)")
    axes[-1].legend(fontsize=6)
    fig.save(f, "Response-time percentiles of the level-0 handler under a level-6 background: "
                "APS (L = 500 us and 100 us), the priority-oblivious scheduler, and no "
                "background (the floor), at each worker count.")

    if ratios:
        f, ax = fig.plot(figsize=(6, 3.4))
        width = 0.8 / max(1, len(counts))
        for j, w in enumerate(counts):
            ys = []
            for pc in PCTS:
                r = next((r for r in ratios if r.name.startswith("interactive %s " % pc)
                          and workers_of(r.params) == w), None)
                ys.append(value_of(r))
            xs = [i + (j - (len(counts) - 1) / 2) * width for i in range(3)]
            bars = ax.bar(xs, ys, width, label="weft, %d worker%s" % (w, "" if w == 1 else "s"))
            ax.bar_label(bars, ["" if math.isnan(y) else "%.2f" % y for y in ys], fontsize=6,
                         padding=1)
        ax.plot(range(3), paper_ratio, "r_", markersize=26, mew=2,
                label="paper I-Cilk / Cilk-F (avg, p95, p99)")
        ax.axhline(1.0, color="black", lw=0.6)
        ax.axhline(0.5, color="tab:green", lw=0.8, ls="--", label="goal <= 0.5")
        ax.set_yscale("log")
        ax.set_xticks(range(3), PCTS)
        ax.set_ylabel("APS / oblivious (log; lower is better)")
        ax.legend(fontsize=6)
        fig.save(f, "The urgent level's response time under APS over the oblivious "
                    "scheduler's, per percentile and worker count (below 1: APS is more "
                    "responsive), beside the paper's I-Cilk / Cilk-F ratio for the email "
                    "client's resp at 30 users (its first mark is the average).")
