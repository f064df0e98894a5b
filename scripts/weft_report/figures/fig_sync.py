"""Concurrent Cilk §6.2-6.3: programs written around blocking (weft-bench's sync section).

The example figure module of docs/report.md: it picks rows with fig.rows(),
writes a paragraph, a paper-vs-weft table, the rows, and two plots.
"""
import math

from weft_report import fmt

ORDER = 70
TITLE = "Concurrent Cilk Figures 8 and 10, Table 2: ivars, mvars and channels vs Go and Boost.Fiber"
PAPER = "Concurrent Cilk (paper 004) §6.2-6.3: Figure 8, Table 2, Figure 10"
SECTIONS = ["sync"]

# parfib(n) with every result through a sync variable: the systems of Figure 8 here.
PARFIB = ["Go goroutines + chan", "Boost.Fiber + buffered_channel", "weft ivar", "weft mvar",
          "weft channel"]


# The ratios the paper prints (Table 2: 0.3981 s / 0.6356 s).
PAPER_RATIO = {"elided / with sync (time)": 0.3981 / 0.6356}


def _workers(params):
    """'parfib(25), 2 workers' -> '2 workers' (the part after the last comma)."""
    return params.rsplit(",", 1)[-1].strip()


def _ratio_text(rows):
    """'0.31x (1 worker), 0.42x (2 workers)' from ratio rows; n/a with the reason."""
    out = []
    for r in rows:
        where = _workers(r.params)
        if r.ok:
            out.append("%.2fx (%s)" % (r.value, where))
        else:
            out.append("n/a (%s: %s)" % (where, r.note or "not measured"))
    return "; ".join(out) if out else "not run"


def render(fig):
    rows = fig.rows(section="^sync$")
    if not rows:
        fig.missing("the sync section was not run (weft-bench --only sync)")
        return
    fig.text(
        "Concurrent Cilk's point (§6.2-6.3): a task may block on a first-class sync variable "
        "(ivar, mvar, channel) and still cost about what a plain spawn costs, because a "
        "task gets its own stack only when it actually blocks (lazy promotion). The `sync` "
        "section measures this as the paper did: **Figure 8**, `parfib(n)` where every result "
        "travels through a sync variable, against Go (goroutines returning through channels) "
        "and Boost.Fiber (fibers over work-stealing threads, buffered channels), each in its "
        "own process, time and peak RSS; **Table 2**, sync elision: filling and reading "
        "10,000 ivars, with and without a sync between the producer and the consumer; "
        "**Figure 10**, a wavefront over tiles: divide-and-conquer against one task per tile "
        "waiting on its neighbours' ivars. Beyond the paper: channel throughput and the memory "
        "of a blocked task, against Go. Ratios below 1 favour weft.")

    ratio = lambda name: fig.rows(section="^sync$", name=name)  # noqa: E731
    ivar_go = ratio(r"^weft ivar / Go \(time\)$")
    rss_go = ratio(r"^weft ivar / Go \(peak RSS\)$")
    mvar_go = ratio(r"^weft mvar / Go \(time\)$")
    chan_go = ratio(r"^weft channel / Go \(time\)$")
    elide = ratio(r"^elided / with sync \(time\)$")
    wave = ratio(r"^wavefront ivars / divide-and-conquer \(time\)$")
    chan_thr = ratio(r"^weft channel / Go chan$")
    blocked = ratio(r"^weft / Go \(KiB per blocked task\)$")
    fibers = ratio(r"^weft ivar: fibers created / tasks$")
    fig.table(
        ["what", "paper", "weft (this run)"],
        [["Fig. 8: parfib through ivars, time / Go's",
          "\"significantly better\" than Go (plot only); Go parfib(30): 4.7 s, 2.6 GB",
          _ratio_text(ivar_go)],
         ["Fig. 8: parfib through ivars, peak RSS / Go's", "Go 2.6 GB, Haskell 1.43 GB "
          "for parfib(30); Concurrent Cilk far less (text)", _ratio_text(rss_go)],
         ["Fig. 8: parfib through mvars, time / Go's", "Haskell MVars: 3.1 s for parfib(30)",
          _ratio_text(mvar_go)],
         ["Fig. 8: parfib through channels, time / Go's", "(not in the paper)",
          _ratio_text(chan_go)],
         ["Lazy promotion: fibers created / tasks spawned (parfib through ivars)",
          "a task gets a stack only when it blocks (§1, §5)",
          "; ".join("%s (%s)" % (fmt(r.value), _workers(r.params)) if r.ok else "n/a"
                    for r in fibers) or "not run"],
         ["Table 2: sync elided / produce-sync-consume", "0.398 s / 0.636 s = 0.63x",
          _ratio_text(elide)],
         ["Fig. 10: wavefront, ivar per tile / divide-and-conquer",
          "below 1 (plot only: following the data dependencies is faster)",
          _ratio_text(wave)],
         ["channel ns/msg / Go's (1->1 .. 4->4, rendezvous and buffered)", "(not in the paper)",
          "median of %d: %s" % (sum(r.ok for r in chan_thr),
                                "%.2fx" % _median([r.value for r in chan_thr if r.ok])
                                if any(r.ok for r in chan_thr) else "n/a")],
         ["KiB of RSS per blocked task / Go's per goroutine", "(not in the paper)",
          _ratio_text(blocked)]])

    # weft over a peer (the fibers-per-task row is a count, shown in the table above).
    ratios = [r for r in rows if r.unit == "x" and " / " in r.name and "fibers" not in r.name]
    fig.text("The ratios of this run (weft's time or memory over the peer's, measured side by "
             "side; goals as weft-bench judges them):")
    fig.rows_table(ratios)

    drawn = [r for r in ratios if r.ok and r.value > 0]
    if drawn:
        f, ax = fig.plot(figsize=(10.0, 0.3 * len(drawn) + 1.4))
        labels = ["%s  [%s]" % (r.name, r.params) for r in drawn]
        colors = ["tab:green" if r.value <= 1 else "tab:red" for r in drawn]
        bars = ax.barh(range(len(drawn)), [r.value for r in drawn], color=colors)
        ax.bar_label(bars, ["%.2g" % r.value for r in drawn], padding=2, fontsize=7)
        ax.set_yticks(range(len(drawn)), labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.axvline(1.0, color="black", linewidth=0.8)
        # The paper's ratio where it printed one (Table 2), on its bar.
        paper = [(k, PAPER_RATIO[r.name]) for k, r in enumerate(drawn) if r.name in PAPER_RATIO]
        if paper:
            ax.plot([v for _, v in paper], [k for k, _ in paper], "kD", markersize=5,
                    label="the paper's ratio")
            ax.legend(fontsize=7, loc="lower right")
        ax.set_xlabel("ratio, weft / peer (log scale; < 1: weft better)")
        fig.save(f, "The sync section's ratios, weft over its peer in the same run (green: "
                    "weft better). Not drawn: %s." % (
                        ", ".join("%s [%s]" % (r.name, r.params) for r in ratios
                                  if not (r.ok and r.value > 0)) or "none"))
    else:
        fig.text("*No ratio was measured in this run (Go and Boost.Fiber missing?), so there "
                 "is no ratio plot.*")

    # Figure 8's shape: parfib time per system, per worker count.
    pf = [r for r in rows if r.name in PARFIB and r.params.startswith("parfib(")]
    groups = list(dict.fromkeys(r.params for r in pf))
    if pf:
        f, ax = fig.plot()
        width = 0.8 / len(PARFIB)
        for k, system in enumerate(PARFIB):
            xs, ys = [], []
            for g, params in enumerate(groups):
                r = next((r for r in pf if r.name == system and r.params == params), None)
                if r is not None and r.ok:
                    xs.append(g + (k - (len(PARFIB) - 1) / 2) * width)
                    ys.append(r.value)
            if ys:
                bars = ax.bar(xs, ys, width, label=system)
                ax.bar_label(bars, ["%.2g" % y for y in ys], padding=1, fontsize=6)
        ax.set_xticks(range(len(groups)), groups)
        ax.set_ylabel("time (s), lower is better")
        ax.legend(fontsize=8)
        fig.save(f, "Figure 8's experiment: parfib with every result through a sync variable, "
                    "seconds per run (the median) for each system and worker count; a system "
                    "without a bar was not measured (see the rows below).")
        fig.rows_table([r for r in rows if r.params.startswith("parfib(")
                        and r.unit != "x"])


def _median(xs):
    xs = sorted(x for x in xs if not math.isnan(x))
    if not xs:
        return float("nan")
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2
