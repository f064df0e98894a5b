"""Cilk-L §5 Figures 2-3 and LHWS §6 Figure 11: map-reduce over 5,000 connections.

weft-bench's io.scale part: speedup over the blocking variant's T1 against the
number of workers, per latency, and the oversubscription break-even latency.
"""
import math
import re

from weft_report import fmt

ORDER = 60
TITLE = "Cilk-L Figures 2-3, LHWS Figure 11: latency hiding over 5,000 connections"
PAPER = ("Cilk-L (paper 000) §5.1-5.2, Figures 2 and 3; latency-hiding work stealing "
         "(paper 002) §6.1, Figure 11")
SECTIONS = ["io.scale"]

# weft's variant (the row name after "scale speedup ") -> the paper's name, line style.
VARIANTS = [
    ("Ideal (zero latency, read())", "Ideal", dict(color="black", linestyle=":", marker="")),
    ("blocking read, P workers", "Cilk-F (blocking, P workers)",
     dict(color="tab:red", marker="s")),
    ("blocking read, 2P workers", "Cilk-F (O) (blocking, 2P threads)",
     dict(color="tab:orange", marker="^")),
    ("I/O futures, epoll ProWS", "weft futures, epoll ProWS (Cilk-L)",
     dict(color="tab:blue", marker="o")),
    ("I/O futures, epoll ParWS", "weft futures, epoll ParWS (LHWS)",
     dict(color="tab:green", marker="D")),
    ("I/O futures, io_uring ProWS", "weft futures, io_uring ProWS",
     dict(color="tab:blue", marker="o", linestyle="--", alpha=0.6)),
    ("I/O futures, io_uring ParWS", "weft futures, io_uring ParWS",
     dict(color="tab:green", marker="D", linestyle="--", alpha=0.6)),
]

# Cilk-L Figure 3 (n=30 b=25, 5,000 connections): Cilk-L's T_P / Ideal's T_P.
PAPER_FIG3 = {1: "0.99-1.04x", 50: "0.99-1.24x", 100: "0.99-1.30x"}
PAPER_BREAK_EVEN_MS = 7.0
PAPER_ITEM_MS = 32.87e3 / 5000  # Figure 3: Ideal T1 32.87 s over 5,000 items


def latency_ms(params):
    m = re.search(r"L=(\d+(?:\.\d+)?)(ms|us)", params)
    if not m:
        return float("nan")
    v = float(m.group(1))
    return v if m.group(2) == "ms" else v / 1000.0


def workers(params):
    m = re.search(r"(\d+) workers?", params)
    return int(m.group(1)) if m else 0


def note_value(note, pattern):
    m = re.search(pattern, note)
    return float(m.group(1)) if m else float("nan")


def render(fig):
    rows = fig.rows(section="^io$", name=r"^(scale|breakeven) ")
    if not rows:
        fig.missing("the io.scale part was not run (weft-bench --only io.scale)")
        return
    speed = [r for r in rows if r.name.startswith("scale speedup ")]
    t1s = [r for r in rows if r.name.startswith("scale blocking T1")]
    lats = sorted({latency_ms(r.params) for r in speed if not math.isnan(latency_ms(r.params))})
    shape = speed[0].params.split(" L=")[0] if speed else "?"

    fig.text(
        "The map-reduce of Cilk-L §5 (and of LHWS §5-6, `distMapReduce`): 5,000 emulated "
        "connections (a timerfd each, readable after the latency L), a parallel fib per "
        "item, results summed modulo 10^9 and checked. Every variant's speedup is over the "
        "**blocking variant on one worker** (Cilk-F's T1), as Figure 2 plots it. Variants: "
        "*Ideal* (zero latency, plain read()), *Cilk-F* (the read blocks the worker: "
        "io_backend::blocking, P workers), *Cilk-F (O)* (the same on 2P threads: the OS "
        "hides latency by oversubscription), weft's I/O futures on epoll and io_uring with "
        "the two steal policies (ProWS is Cilk-L's, ParWS LHWS's). The blocking variants "
        "at long latencies run on part of the 5,000 items and are scaled to all of them "
        "(their time is linear in the items: each leaf holds a worker for L; the row's note "
        "says how many). Shape here: `%s`; the papers' item is fib(30)/b25, about 6.6 ms of "
        "work (T1 = 32.87 s), which would make one blocking run at 500 ms last 40 minutes: "
        "weft's item is smaller, so its speedups over the blocking T1 (which is about "
        "N x L) run higher than the paper's. This machine has %s CPUs: P = 4 and 8 are "
        "more workers than cores (oversubscribed), reported as such. Absolute times are not "
        "comparable to the papers' machine (40 cores, hyperthreads); ratios are." % (
            shape, fig.machine.get("cpus", "?")))

    # --- the plot: speedup against P, one panel per latency (Figure 2's layout).
    if speed and lats:
        f, axes = fig.plot(1, len(lats), figsize=(3.6 * len(lats) + 1.0, 4.2), squeeze=False)
        for k, L in enumerate(lats):
            ax = axes[0][k]
            for name, label, style in VARIANTS:
                pts = sorted((workers(r.params), r.value) for r in speed
                             if r.name == "scale speedup " + name and r.ok
                             and latency_ms(r.params) == L)
                if pts:
                    ax.plot([p for p, _ in pts], [v for _, v in pts], label=label, **style)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ps = sorted({workers(r.params) for r in speed})
            ax.set_xticks(ps, [str(p) for p in ps])
            ax.set_xlabel("workers P")
            ax.set_title("L = %s ms" % fmt(L))
            ax.grid(True, which="both", alpha=0.3)
            if k == 0:
                ax.set_ylabel("speedup over Cilk-F's T1 (log)")
        handles, labels = axes[0][0].get_legend_handles_labels()
        if handles:
            axes[0][0].legend(handles, labels, loc="upper left", fontsize=6)
        fig.save(f, "Speedup over the blocking variant's one-worker time (Cilk-F's T1) "
                    "against the workers P, per latency (Cilk-L Figure 2's axes; log-log "
                    "here, the speedups span three decades). A variant without a point "
                    "was not measured (see the rows).")

    # --- paper vs weft
    def sp(name, L, P):
        for r in speed:
            if (r.name == "scale speedup " + name and latency_ms(r.params) == L
                    and workers(r.params) == P):
                return r
        return None

    def sp_text(name, L, Ps):
        out = []
        for P in Ps:
            r = sp(name, L, P)
            out.append("P=%d: %s" % (P, fmt(r.value) + "x" if r is not None and r.ok else "n/a"))
        return ", ".join(out)

    ps = sorted({workers(r.params) for r in speed})
    table = []
    for L in lats:
        # Cilk-L against Ideal at the same P (Figure 3's ratios).
        ratios = []
        for P in ps:
            a, b = sp("I/O futures, epoll ProWS", L, P), sp("Ideal (zero latency, read())", L, P)
            if a is not None and b is not None and a.ok and b.ok and a.value > 0:
                ratios.append(b.value / a.value)
        ratio_text = ("%s-%sx" % (fmt(min(ratios)), fmt(max(ratios)))) if ratios else "n/a"
        table.append(["T_P(futures, epoll ProWS) / T_P(Ideal), L = %s ms, P = %s" % (
                          fmt(L), "-".join(str(p) for p in (ps[:1] + ps[-1:]))),
                      PAPER_FIG3.get(int(L), "(not in Figure 3)") +
                      (" (P = 1-40)" if int(L) in PAPER_FIG3 else ""),
                      ratio_text])
    paper_speedup = {
        1: "Cilk-L some advantage; Cilk-F (O) beats Cilk-L and Ideal (hyperthreads)",
        50: "Cilk-L > 9x at P=1, > 313x at P=40; Cilk-F (O) about 2P",
        100: "Cilk-L > 530x at P=40; Cilk-F (O) about 2P",
        500: "LHWS Fig. 11: superlinear, up to 3x the speedup of plain work stealing",
    }
    for L in lats:
        table.append(["speedup over Cilk-F's T1, L = %s ms: futures (epoll ProWS)" % fmt(L),
                      paper_speedup.get(int(L), ""),
                      sp_text("I/O futures, epoll ProWS", L, ps)])
        table.append(["... Cilk-F (O), blocking on 2P threads", "about 2P" if L >= 50 else "",
                      sp_text("blocking read, 2P workers", L, ps)])
    for r in t1s:
        table.append(["Cilk-F's T1 (the baseline), L = %s ms" % fmt(latency_ms(r.params)),
                      "about N x (L + 6.6 ms)", fmt(r.value, "s")])
    be = [r for r in rows if r.name.startswith("breakeven latency")]
    for r in be:
        w = note_value(r.note, r"w = ([0-9.e+-]+) ms")
        table.append(["break-even latency, %s [%s]" % (
                          r.name.split(", ", 1)[-1].replace(" vs blocking 2P", ""),
                          r.params.split(", ", 1)[-1]),
                      "about 7 ms (item 6.6 ms: L*/w ~1.1), all P",
                      ((fmt(r.value, "ms") + " (item %s ms: L*/w %s)" % (
                          fmt(w), fmt(r.value / w) if w == w else "n/a"))
                       if r.ok else (r.note.split(";")[0] if r.note else "n/a"))
                      + (" — flat sweep, every ratio near 1: noise, no clear break-even"
                         if "flat:" in r.note else "")])
    fig.table(["what", "paper", "weft (this run)"], table)

    # --- the break-even sweep
    ber = [r for r in rows if r.name.startswith("breakeven futures ")]
    if ber:
        fig.text(
            "**The oversubscription break-even** (Cilk-L §5.1: \"Cilk-L breaks even / "
            "outperforms the oversubscription strategy at a latency of 7 milliseconds or "
            "higher for all P\"): the paper's item (fib(30)/b25) on fewer connections, I/O "
            "futures on P workers against blocking reads on 2P threads, the time ratio of "
            "paired rounds per latency; the break-even is the latency from which on the "
            "futures win (the last crossing of 1, interpolated in log-log). Why it exists: with L below one item's work w, the two threads of "
            "a core keep it busy between them, and in the paper they run on the core's two "
            "hyperthreads while Cilk-L's worker has one. The configuration \"1 worker, 2 "
            "threads on 2 CPUs\" gives the blocking threads that spare hardware context, as "
            "the paper's machine did; pinned to one CPU, or with 2 workers on the 2 CPUs, "
            "they have none, and the futures should win at every latency. The x axis is "
            "L / w, so that the paper's ~7 ms (w ~6.6 ms) sits at ~1.1.")
        f, ax = fig.plot(figsize=(7.5, 4.2))
        groups = list(dict.fromkeys(r.params.split(", ", 1)[-1] for r in ber))
        colors = ["tab:blue", "tab:orange", "tab:green", "tab:purple"]
        for gi, g in enumerate(groups):
            for kind, style in (("epoll", "-"), ("epoll_threads", "--")):
                pts = []
                for r in ber:
                    if r.params.split(", ", 1)[-1] != g or not r.ok:
                        continue
                    if r.name != "breakeven futures %s / blocking 2P" % kind:
                        continue
                    w = next((note_value(b.note, r"w = ([0-9.e+-]+) ms") for b in be
                              if b.params.split(", ", 1)[-1] == g), float("nan"))
                    if w == w and w > 0:
                        pts.append((latency_ms(r.params) / w, r.value))
                pts.sort()
                if pts:
                    ax.plot([x for x, _ in pts], [y for _, y in pts], linestyle=style,
                            marker="o", color=colors[gi % len(colors)],
                            label="%s, %s" % (g, "epoll" if kind == "epoll"
                                              else "epoll_threads (Cilk-L)"))
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axvline(PAPER_BREAK_EVEN_MS / PAPER_ITEM_MS, color="gray", linestyle=":",
                   label="the paper's break-even (7 ms / 6.6 ms)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("latency / one item's work (L / w, log)")
        ax.set_ylabel("T(futures) / T(blocking on 2P threads) (log)")
        ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        fig.save(f, "The oversubscription break-even: time of the I/O futures over the "
                    "time of blocking reads on 2P threads (below 1: the futures win), "
                    "against the latency in units of one item's work.")

    fig.text("The rows of this run (speedups, the blocking baselines, the break-even sweep):")
    fig.rows_table(rows)
