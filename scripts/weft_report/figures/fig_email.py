# The email client of I-Cilk §5.2, Figure 6: weft-bench's `email` section
# (bench/email.cpp, the app examples/apps/email).
import math
import re
from weft_report import value_of

ORDER = 30
TITLE = "I-Cilk Figure 6: the email client"
PAPER = "I-Cilk (paper 001) §5.2, Figure 6"
SECTIONS = ["email"]

# Figure 6, 30 users on 10 cores (avg, 95%, 99%): I-Cilk (APS) and Cilk-F (oblivious).
PAPER_30 = {
    "resp": {"APS": (46.91, 125.11, 500.72), "oblivious": (486.00, 344.58, 7433.00)},
    "send": {"APS": (392.37, 1608.09, 4893.00), "oblivious": (501.84, 374.74, 7938.14)},
    "sort": {"APS": (3.38, 9.66, 30.43), "oblivious": (2.40, 4.39, 19.33)},
    "print": {"APS": (4.13, 35.59, 50.45), "oblivious": (3.85, 34.88, 40.82)},
    "compress": {"APS": (127.36, 326.18, 484.74), "oblivious": (13.45, 13.67, 40.29)},
}
UNITS = {"resp": "us", "send": "us", "sort": "us/msg", "print": "ms", "compress": "ms"}
STATS = ("avg", "p95", "p99")
PARAMS = re.compile(r"^(\d+) clients x (\d+) requests, (\d+) workers?$")


def _parse(params):
    m = PARAMS.match(params or "")
    return (int(m.group(1)), int(m.group(3))) if m else None


def _val(fig, name, params):
    return value_of(fig.row("email", name, params))


def _fmt(x, nd=3):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return ("%%.%dg" % nd) % x


def render(fig):
    rows = fig.rows(section="^email$")
    configs = sorted({p for p in (_parse(r.params) for r in rows) if p}, key=lambda p: (p[1], p[0]))
    if not configs:
        fig.missing("the email section has no measured rows")
        return
    params_of = {}
    for r in rows:
        p = _parse(r.params)
        if p:
            params_of[p] = r.params
    workers = sorted({w for _, w in configs})
    clients = sorted({c for c, _ in configs})
    failed = [r for r in rows if r.failed]

    fig.text(
        "The email client of I-Cilk §5.2 as a weft program (`examples/apps/email`, "
        "`email_client --help`): a multi-user email server whose tasks run at five "
        "priority levels, most urgent first: the request loop (accept, read requests, "
        "acknowledge), send (store a message file in the recipient's mailbox), sort (a "
        "user's listing), compress and uncompress-and-print (zlib, equal level), and the "
        "periodic check that triggers compression. Users are client threads on loopback TCP "
        "sending a mix of 40% send, 20% sort, 40% print with an exponential think time "
        "(mean 1 ms), at most 4 requests in flight each. The same program runs under APS and "
        "under the priority-oblivious scheduler (every task at one level: the paper's "
        "Cilk-F), alternating in each repetition; every run checks its mailbox (each message "
        "stored once, decompressing to the bytes sent; listings sorted). "
        "Units as the paper's: resp (request sent to acknowledgement: its task exists) and "
        "send in µs, sort in µs per message listed, print and compress in ms. Each value is "
        "the median over the repetitions of the run's statistic. The paper ran 30-120 users "
        "on 10 cores with the clients on 30 other cores; here 1-30 users on " +
        "/".join(map(str, workers)) + " worker(s), "
        "and the client threads share the machine's cores with the workers, so absolute "
        "times are not comparable: the APS / oblivious ratios are.")
    fig.text("How to read it: with one client there is almost no queueing, so neither "
             "scheduler delays the request loop and the resp ratio is noise around 1 (APS adds "
             "its master thread). The priorities matter once the clients keep the workers busy "
             "(4-30 clients): APS keeps the request loop and send fast and lets sort, print and "
             "compress wait. At 1 worker the least urgent level (the periodic check) may get no "
             "worker at all during a run, as the paper notes for 120 users; the compress rows "
             "of APS are then missing (no compress task ran). Throughput is the requests of "
             "all clients over the time to the last completion; clients wait for each "
             "acknowledgement, so a slow request loop (oblivious) also lowers it. The machine "
             "is shared and loaded: the spread columns show how noisy each median is.")
    if failed:
        fig.text("**%d row(s) failed** (wrong mailbox or error): %s" %
                 (len(failed), "; ".join(sorted({r.note for r in failed}))[:400]))

    # Paper vs weft at 30 users (the paper's smallest configuration).
    big = max(clients)
    table = []
    for w in workers:
        p = params_of.get((big, w))
        if p is None:
            continue
        for metric in ("resp", "send", "sort", "print", "compress"):
            for k, st in enumerate(STATS):
                pa = PAPER_30[metric]["APS"][k]
                po = PAPER_30[metric]["oblivious"][k]
                a = _val(fig, "%s %s, APS" % (metric, st), p)
                o = _val(fig, "%s %s, oblivious" % (metric, st), p)
                table.append(["%s %s (%s), %d w" % (metric, st, UNITS[metric], w),
                              "%s / %s = %s" % (_fmt(pa), _fmt(po), _fmt(pa / po, 2)),
                              "%s / %s = %s" % (_fmt(a), _fmt(o), _fmt(a / o if o else float("nan"), 2))])
    if table:
        fig.text("Paper (30 users, I-Cilk / Cilk-F) beside weft (%d clients, APS / oblivious), "
                 "the same statistic; the ratio is what compares." % big)
        fig.table(["what", "paper: I-Cilk / Cilk-F", "weft: APS / oblivious"], table)

    # The goals of issue 12: resp p50/p95/p99 APS / oblivious <= 0.5, throughput >= 0.95.
    goal_rows = fig.rows(section="^email$", name=r"^(resp p(50|95|99)|throughput) APS / oblivious$")
    if goal_rows:
        met = sum(1 for r in goal_rows if r.goal and r.goal.get("met"))
        fig.text("Goals (issue 12): the request loop's (urgent level's) resp p50, p95 and p99 "
                 "under APS at most 0.5x oblivious, and throughput (requests/s, all clients) "
                 "within 5%% (APS / oblivious >= 0.95). Met: %d of %d." % (met, len(goal_rows)))
        fig.rows_table(fig.rows(section="^email$", name=r"APS / oblivious$"))

    # Plot 1: resp percentiles' ratio against the client count, per worker count.
    f, ax = fig.plot()
    marks = {"p50": "o", "p95": "s", "p99": "^"}
    for w in workers:
        for st in ("p50", "p95", "p99"):
            xs, ys = [], []
            for c in clients:
                p = params_of.get((c, w))
                v = _val(fig, "resp %s APS / oblivious" % st, p) if p else float("nan")
                if not math.isnan(v) and v > 0:
                    xs.append(c)
                    ys.append(v)
            if xs:
                ax.plot(xs, ys, marker=marks[st], linestyle="-" if w == workers[0] else "--",
                        label="%s, %d worker%s" % (st, w, "" if w == 1 else "s"))
    ax.axhline(0.5, color="gray", linestyle=":", label="goal 0.5")
    ax.axhline(PAPER_30["resp"]["APS"][0] / PAPER_30["resp"]["oblivious"][0], color="red",
               linestyle=":", label="paper avg, 30 users (0.097)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(clients)
    ax.set_xticklabels([str(c) for c in clients])
    ax.set_xlabel("clients")
    ax.set_ylabel("resp APS / oblivious (lower is better)")
    ax.legend(fontsize="small")
    fig.save(f, "Response time of the request loop (most urgent level), APS over "
                "priority-oblivious, by client count; below 1 APS is faster, the dotted gray "
                "line is the issue's goal.")

    # Plot 2: every metric's average, APS and oblivious, at the largest client count.
    metrics = ("resp", "send", "sort", "print", "compress")
    f, axes = fig.plot(ncols=len(workers), figsize=(5.5 * len(workers), 4), squeeze=False)
    for i, w in enumerate(workers):
        ax = axes[0][i]
        p = params_of.get((big, w))
        xs = range(len(metrics))
        a = [_val(fig, "%s avg, APS" % m, p) if p else float("nan") for m in metrics]
        o = [_val(fig, "%s avg, oblivious" % m, p) if p else float("nan") for m in metrics]
        ax.bar([x - 0.2 for x in xs], a, width=0.4, label="APS")
        ax.bar([x + 0.2 for x in xs], o, width=0.4, label="oblivious")
        ax.set_xticks(list(xs))
        ax.set_xticklabels(["%s\n(%s)" % (m, UNITS[m]) for m in metrics])
        ax.set_yscale("log")
        ax.set_title("%d clients, %d worker%s" % (big, w, "" if w == 1 else "s"))
        ax.legend(fontsize="small")
    fig.save(f, "Average time of each kind of task at %d clients, APS against oblivious (log "
                "scale; each bar in its own unit). As in the paper, APS shortens the urgent "
                "levels (resp, send) at the expense of the least urgent (compress)." % big)

    fig.text("All the section's rows:")
    fig.rows_table(rows)
