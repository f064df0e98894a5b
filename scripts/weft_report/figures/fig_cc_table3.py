"""Concurrent Cilk §6.4, Table 3: a compute server with per-client parallel work.

weft-bench's io.server part: the paper's four strategies (conc cilk/cilk,
cilk/cilk, pthread/seq, pthread/pthread) on a loopback TCP server, side by side.
"""
import re

from weft_report import fmt

ORDER = 65
TITLE = "Concurrent Cilk Table 3: a server with parallel work per client"
PAPER = "Concurrent Cilk (paper 004) §6.4, Table 3"
SECTIONS = ["io.server"]

# weft's server rows -> Table 3's strategy, bar colour.
SERVERS = [
    ("server weft epoll, task/client", "conc cilk/cilk (weft, epoll)", "tab:blue"),
    ("server weft io_uring, task/client", "conc cilk/cilk (weft, io_uring)", "tab:cyan"),
    ("server weft blocking, task/client", "cilk/cilk (weft, blocking calls)", "tab:orange"),
    ("server thread/client, sequential fib", "pthread/seq", "tab:gray"),
    ("server thread/client, thread per fork", "pthread/pthread", "tab:red"),
]

# Table 3 as printed (requests per second; 16 cores). The fib(30) pthread/seq
# rows are all labelled "8 clients" in the paper.
PAPER_FIB40 = {  # clients -> (pthread/seq, cilk/cilk, conc cilk/cilk)
    1: (2.53, 33, 35),
    4: (9, 33, 35),
    8: (18, 35, 35),
}
PAPER_FIB30_PTHREAD_SEQ_8 = "1891, 1690, 1656"
PAPER_FIB30_PTHREAD_PTHREAD = {1: "0.48", 4: "0.12", 8: "died"}


def clients(params):
    m = re.search(r"(\d+) clients?", params)
    return int(m.group(1)) if m else 0


def workload(params):
    return params.split(",", 1)[0].strip()  # "fib(28)/b15"


def render(fig):
    rows = fig.rows(section="^io$", name=r"^server ")
    if not rows:
        fig.missing("the io.server part was not run (weft-bench --only io.server)")
        return
    fig.text(
        "Concurrent Cilk §6.4: a server computes a parallel fib per request for each client; "
        "the outer loop (accept, recv, send per client) blocks, the inner loop is parallel. "
        "Table 3's strategies, all here on one loopback TCP server each, measured in "
        "interleaved rounds: **conc cilk/cilk**, a task per client with weft's I/O futures "
        "(`weft::io::accept/recv/send`, epoll or io_uring) and fork-join inside; "
        "**cilk/cilk**, the same tasks but every call is the plain blocking system call "
        "(io_backend::blocking: it holds its worker); **pthread/seq**, a thread per client "
        "computing sequentially; **pthread/pthread**, a thread per client and a `std::thread` "
        "per fork of the fib down to the same serial base case (it serves a fraction of the "
        "requests, its time scaled to all of them; its rows say how many). C clients send "
        "their requests in a closed loop; every answer is checked. The paper ran 16 cores "
        "and fib(40)/fib(30) with a base case of fib(10); weft runs %s workers and smaller "
        "requests, so compare **ratios**, each normalised by the cores where it matters: a "
        "single client can use every core under cilk, one core under pthread/seq." % (
            fig.machine.get("cpus", "?")))

    rate = {}  # (row name, workload, clients) -> Row
    for r in rows:
        if r.unit == "req/s":
            rate[(r.name, workload(r.params), clients(r.params))] = r
    works = list(dict.fromkeys(workload(r.params) for r in rows))
    cs = sorted({clients(r.params) for r in rows})

    # Table 3 side by side: requests per second per strategy and client count.
    head = ["workload", "clients"] + [label for _, label, _ in SERVERS]
    body = []
    for w in works:
        for c in cs:
            cells = [w, c]
            for name, _, _ in SERVERS:
                r = rate.get((name, w, c))
                cells.append(fmt(r.value) if r is not None and r.ok
                             else ("FAILED" if r is not None and r.failed else "n/a"))
            body.append(cells)
    for c in sorted(PAPER_FIB40):
        s, ck, cc = PAPER_FIB40[c]
        body.append(["paper: fib(40)", c, fmt(float(cc)), "", fmt(float(ck)), fmt(s), ""])
    for c in sorted(PAPER_FIB30_PTHREAD_PTHREAD):
        body.append(["paper: fib(30)", c, "", "", "", PAPER_FIB30_PTHREAD_SEQ_8 if c == 8 else "",
                     PAPER_FIB30_PTHREAD_PTHREAD[c]])
    fig.text("Requests per second (the median of the rounds), weft's runs and then Table 3 as "
             "printed (16 cores; its three fib(30) pthread/seq rows are all labelled 8 "
             "clients):")
    fig.table(head, body)

    # The ratios, paper vs weft.
    def ratio(name, w, c):
        r = next((x for x in rows if x.name == name and workload(x.params) == w
                  and clients(x.params) == c), None)
        return r

    big = works[-1] if works else ""
    table = []
    for c in cs:
        p = PAPER_FIB40.get(c)
        for label, name, paper in (
                ("conc cilk/cilk / pthread/seq", "server weft epoll / threads (req/s)",
                 p[2] / p[0] if p else None),
                ("cilk/cilk / pthread/seq", "server weft blocking / threads (req/s)",
                 p[1] / p[0] if p else None),
                ("conc cilk/cilk / cilk/cilk", "server weft epoll / weft blocking (req/s)",
                 p[2] / p[1] if p else None)):
            r = ratio(name, big, c)
            table.append(["%s, %d client%s" % (label, c, "" if c == 1 else "s"),
                          ("%sx (fib(40), 16 cores)" % fmt(paper)) if paper else "",
                          ("%sx (%s)" % (fmt(r.value), big)) if r is not None and r.ok
                          else "n/a"])
        r = ratio("server thread per fork / threads (req/s)", big, c)
        table.append(["pthread/pthread / pthread/seq, %d client%s" % (c, "" if c == 1 else "s"),
                      {1: "0.48 req/s against ~250 (fib(30), 4 ms each): ~0.002x",
                       4: "0.12 req/s", 8: "died"}.get(c, ""),
                      ("%sx (%s)" % (fmt(r.value), big)) if r is not None and r.ok else "n/a"])
    fig.text("Ratios (throughput of one strategy over another's, same requests, paired "
             "rounds), on the largest requests (%s). With one client, the paper's conc "
             "cilk/cilk reaches 13.8x pthread/seq on 16 cores (86%% of the cores); on this "
             "machine's %s CPUs the most is %sx." % (
                 big, fig.machine.get("cpus", "?"), fig.machine.get("cpus", "?")))
    fig.table(["what", "paper", "weft (this run)"], table)

    # The plot: requests per second per strategy, per client count, per workload.
    if works:
        f, axes = fig.plot(1, len(works), figsize=(5.2 * len(works) + 1.0, 4.2), squeeze=False)
        width = 0.8 / len(SERVERS)
        for k, w in enumerate(works):
            ax = axes[0][k]
            for j, (name, label, color) in enumerate(SERVERS):
                xs, ys = [], []
                for i, c in enumerate(cs):
                    r = rate.get((name, w, c))
                    if r is not None and r.ok and r.value > 0:
                        xs.append(i + (j - (len(SERVERS) - 1) / 2) * width)
                        ys.append(r.value)
                if ys:
                    ax.bar(xs, ys, width, label=label, color=color)
            ax.set_xticks(range(len(cs)), ["%d client%s" % (c, "" if c == 1 else "s")
                                           for c in cs])
            ax.set_yscale("log")
            ax.set_title(w)
            if k == 0:
                ax.set_ylabel("requests per second (log), higher is better")
                ax.legend(fontsize=7)
        fig.save(f, "Table 3's strategies on weft, requests per second per client count, for "
                    "each request size (a missing bar was not measured: see the rows).")

    fig.text("The rows of this run:")
    fig.rows_table(rows)
