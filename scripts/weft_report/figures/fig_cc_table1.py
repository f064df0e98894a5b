"""Concurrent Cilk Table 1: ping-pong between two tasks through ivars against
two threads (weft-bench's pingpong section)."""

ORDER = 72
TITLE = "Concurrent Cilk Table 1: ping-pong, tasks on ivars vs threads on a condition variable"
PAPER = "Concurrent Cilk (paper 004) §3, Table 1"
SECTIONS = ["pingpong"]

# Table 1: seconds for 100,000 ping-pongs.
PAPER_PTHREAD, PAPER_SAME_CORE, PAPER_DIFF_CORE = 0.849984, 0.174844, 0.394509


def render(fig):
    from weft_report import fmt
    weft = fig.rows(section="^pingpong$", name=r"^weft tasks, ivars$")
    threads = fig.rows(section="^pingpong$", name=r"^pthreads, mutex\+condvar$")
    ratios = fig.rows(section="^pingpong$", name=r"^pthreads.* / weft")
    if not weft and not threads:
        fig.missing("the pingpong rows are missing (weft-bench --only pingpong)")
        return
    fig.text(
        "Two tasks pass a token back and forth through a pair of ivars (used once each, as "
        "in the paper), against two threads on a mutex and condition variable "
        "(`pthread_cond_signal`, the paper's baseline): the cost of a blocking hand-off, "
        "which is a context switch. The paper measured 100,000 round trips; the parameters "
        "give this run's count. Absolute seconds are not comparable with the paper's machine: "
        "compare the speedups over threads.")

    def ratio(name, params):
        r = next((r for r in ratios if r.name == name and r.params == params), None)
        return ("%.1fx" % r.value) if r is not None and r.ok else (
            "n/a (%s)" % (r.note if r is not None else "not run"))

    fig.table(
        ["what", "paper (s, 100,000 round trips)", "paper ratio", "weft (this run)"],
        [["threads / tasks, tasks on one core", "%.3f / %.3f" % (PAPER_PTHREAD, PAPER_SAME_CORE),
          "%.1fx" % (PAPER_PTHREAD / PAPER_SAME_CORE),
          "%s (1 worker, unpinned threads); %s (both threads pinned to one CPU)" % (
              ratio("pthreads / weft (unpinned pthreads)", "1 worker"),
              ratio("pthreads on 1 CPU / weft", "1 worker"))],
         ["threads / tasks, tasks on different cores",
          "%.3f / %.3f" % (PAPER_PTHREAD, PAPER_DIFF_CORE),
          "%.1fx" % (PAPER_PTHREAD / PAPER_DIFF_CORE),
          "%s (2 workers: where the tasks run is up to stealing, as in the paper)"
          % ratio("pthreads / weft (unpinned pthreads)", "2 workers")]])
    fig.rows_table(weft + threads + ratios)

    drawn = [r for r in weft + threads if r.ok]
    if drawn:
        f, ax = fig.plot()
        labels = ["%s\n%s" % (r.name, r.params.split(",")[-1].strip()) for r in drawn]
        bars = ax.bar(range(len(drawn)), [r.value * 1e3 for r in drawn],
                      color=["tab:green" if r.name.startswith("weft") else "tab:gray"
                             for r in drawn])
        ax.bar_label(bars, [fmt(r.value * 1e3) for r in drawn], fontsize=8)
        ax.set_xticks(range(len(drawn)), labels, fontsize=7)
        ax.set_ylabel("ms for the run's round trips (lower is better)")
        fig.save(f, "Ping-pong: weft tasks on ivars (green) against threads on a condition "
                    "variable (gray), %s. The paper's Table 1: threads 0.850 s, Concurrent "
                    "Cilk 0.175 s (same core) and 0.395 s (different cores) for 100,000 "
                    "round trips." % (drawn[0].params.split(",")[0]))
