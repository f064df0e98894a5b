"""Fibertures §4.1, Tables 4.1-4.2: Smith-Waterman with a future per tile (weft-bench's migrate section).

Rows (bench/migrate.cpp): "serial" (n=L), "std::async" and "weft (migrated)"
(n=L, T tiles; a failed std run is a row without a value whose note gives
the std::system_error), and the ratios "std::async / weft (time)",
"serial / weft (speedup)".
"""
import re

ORDER = 45
TITLE = "Fibertures Tables 4.1-4.2: Smith-Waterman, a future per tile, std::async vs weft"
PAPER = "Fibertures (paper 003) §4.1, Tables 4.1 and 4.2"
SECTIONS = ["migrate"]

# The paper's means (ms), 4-core/8-thread i7-3770K, sequences of 18,560 and 19,200.
SEQ = 26335
TABLE_41 = {"STL": (6349, 552), "Fibertures": {1: 25510, 2: 13153, 4: 7284, 8: 6218, 16: 6780},
            "HClib": {1: 26650, 2: 13540, 4: 7113, 8: 6463, 16: 7126}}
TABLE_42 = {"STL": None,  # std::system_error: too many threads (2,208 tiles)
            "Fibertures": {1: 25534, 2: 13461, 4: 7615, 8: 6343, 16: 6319}}


def _tiles(params):
    m = re.search(r"(\d+) tiles", params)
    return int(m.group(1)) if m else None


def render(fig):
    rows = fig.rows(section="^migrate$")
    if not rows:
        fig.missing("the migrate section was not run (weft-bench --only migrate)")
        return
    fig.text(
        "Smith-Waterman local alignment with one future per tile of the score matrix (a tile "
        "waits on its upper, left and upper-left neighbours' futures), written for "
        "`std::async` (`bench/smith_waterman_std.cpp`, the code of the paper's Figures "
        "4.2-4.3) and run three ways, each in its own process: as written (a thread per "
        "tile), after `scripts/weft-migrate` (a weft task per tile, on as many workers as "
        "online CPUs), and serially. The paper (Table 4.1) found the STL about as fast as "
        "Fibertures with 552 tiles, and (Table 4.2) the STL failing with `std::system_error` "
        "at 2,208 tiles. Absolute times are not comparable (other machine, other sequence "
        "lengths); compare the ratios and where `std::async` fails.")

    fib, stl = TABLE_41["Fibertures"], TABLE_41["STL"]
    workers = None
    for r in rows:
        m = re.search(r"(\d+) workers?", r.note)
        if r.name == "weft (migrated)" and m:
            workers = int(m.group(1))
    w = workers if workers in fib else 2
    tiles = sorted({_tiles(r.params) for r in rows if _tiles(r.params)})

    def ratio(name, t):
        for r in rows:
            if r.name == name and _tiles(r.params) == t:
                return r
        return None

    def std_at(t):
        r = next((r for r in rows if r.name == "std::async" and _tiles(r.params) == t), None)
        if r is None:
            return "not run"
        if r.ok:
            return "ran: %.0f ms" % r.value
        return "failed: " + (r.note or "not measured")

    def near(target):
        return min(tiles, key=lambda t: abs(t - target)) if tiles else None

    t552, t2208 = near(552), near(2208)
    table = []
    for label, t, paper in (
            ("std::async time / futures' time, ~552 tiles", t552,
             "%.2fx (STL %d ms / Fibertures 8 threads %d ms)" % (stl[0] / fib[8], stl[0], fib[8])),
            ("serial / futures (speedup), ~552 tiles", t552,
             "%.2fx at %d threads (%d / %d ms); %.2fx at 8" % (SEQ / fib[w], w, SEQ, fib[w], SEQ / fib[8])),
            ("serial / futures (speedup), ~2,208 tiles", t2208,
             "%.2fx at %d threads (%d / %d ms)" % (SEQ / TABLE_42["Fibertures"][w], w, SEQ,
                                                 TABLE_42["Fibertures"][w]))):
        if "std::async" in label:
            r = ratio("std::async / weft (time)", t)
        else:
            r = ratio("serial / weft (speedup)", t)
        ours = ("%.2fx" % r.value if r is not None and r.ok else "n/a (%s)" % (r.note if r is not None and r.note
                                                                             else "not measured"))
        table.append([label + ("" if t is None else " (here: {:,})".format(t)), paper, ours])
    table.append(["std::async at ~2,208 tiles" + ("" if t2208 is None else " (here: {:,})".format(t2208)),
                  "failed: std::system_error (too many threads)", std_at(t2208)])
    big = [t for t in tiles if t2208 is not None and t > t2208]
    if big:
        table.append(["std::async beyond the paper ({})".format(", ".join("{:,}".format(t) for t in big)),
                      "(not in the paper)", "; ".join("{:,}: {}".format(t, std_at(t)) for t in big)])
    fig.table(["what", "paper (Fibertures, %d worker threads unless noted)" % w,
               "weft (this run, %s workers)" % (workers if workers else "?")], table)

    fig.rows_table([r for r in rows if r.unit != "x"])
    fig.rows_table([r for r in rows if r.unit == "x"])

    f, (ax, ax2) = fig.plot(ncols=2, figsize=(11.0, 4.2))
    serial = next((r for r in rows if r.name == "serial" and r.ok), None)
    for name, color, marker in (("std::async", "tab:red", "D"), ("weft (migrated)", "tab:green", "s")):
        pts = [(t, ratio(name, t)) for t in tiles]
        ok = [(t, r.value) for t, r in pts if r is not None and r.ok]
        if ok:
            ax.plot([p[0] for p in ok], [p[1] for p in ok], marker=marker, color=color, label=name)
        bad = [t for t, r in pts if r is not None and not r.ok]
        if bad:
            top = max([p[1] for p in ok] or [serial.value if serial else 1.0])
            ax.scatter(bad, [top] * len(bad), marker="x", s=80, color=color, label=name + " failed / not run")
    if serial is not None:
        ax.axhline(serial.value, color="black", linestyle="--", linewidth=0.8, label="serial")
    ax.set_xscale("log")
    ax.set_xlabel("tiles (futures)")
    ax.set_ylabel("time (ms), median")
    ax.set_title("weft, this run", fontsize=9)
    ax.legend(fontsize=7)

    labels = ["seq", "STL\n552"] + ["Fib %d\n552" % k for k in (1, 2, 4, 8, 16)] + \
             ["STL\n2208"] + ["Fib %d\n2208" % k for k in (1, 2, 4, 8, 16)]
    vals = [SEQ, stl[0]] + [fib[k] for k in (1, 2, 4, 8, 16)] + [0] + \
           [TABLE_42["Fibertures"][k] for k in (1, 2, 4, 8, 16)]
    colors = ["black", "tab:red"] + ["tab:green"] * 5 + ["tab:red"] + ["tab:green"] * 5
    ax2.bar(range(len(vals)), vals, color=colors)
    ax2.set_xticks(range(len(vals)), labels, fontsize=6)
    ax2.set_ylabel("time (ms), mean of 10 runs")
    ax2.set_title("paper: Tables 4.1-4.2 (4-core i7)", fontsize=9)
    ax2.text(7, 1500, "failed", color="tab:red", fontsize=7, ha="center", rotation=90)
    fig.save(f, "Left: this run's Smith-Waterman times against the number of tiles (x: the "
                "std::async program failed or was not run at that count; see the rows); dashed: "
                "serial. Right: the paper's Tables 4.1-4.2 (seq = sequential STL, STL = "
                "std::async, Fib W = Fibertures on W threads; the number under each bar is "
                "the tile count); the STL failed at 2,208 tiles.")
