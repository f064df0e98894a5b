"""ctest checks of scripts/weft-report (tests/report/CMakeLists.txt).

    python3 check_report.py MODE SCRIPT OUTDIR

MODE basic: the report of tests/report/results.json with the test figure
modules of tests/report/figures (they call every Figure API) and the built-in
ones: exit 0, index.md with the header, contents, each section, the appendix
with every row; the SVGs exist and hold their text.
MODE raising: with tests/report/figures_raising (a module that raises): exit 1,
index.md still written, with the traceback; the other sections intact.
MODE bad-input: unreadable or malformed results, a missing --figures
directory: exit 2 with a message, and no report.
MODE bench (SCRIPT is weft-bench here): `weft-bench --only spawn --quick
--reps 1 --report OUTDIR` writes OUTDIR/results.json and OUTDIR/index.md.

Exit 0 pass, 1 fail, 77 skipped (weft-report found no Python with matplotlib:
its exit status 3).
"""
import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in scripts/weft_report (github_slug imports it)
HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def run(script, *args):
    p = subprocess.run([sys.executable, script] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    print("$ weft-report %s -> exit %d" % (" ".join(args), p.returncode))
    if p.stdout.strip():
        print(p.stdout.rstrip())
    if p.stderr.strip():
        print(p.stderr.rstrip())
    if p.returncode == 3 and "matplotlib" in p.stderr:
        print("SKIPPED: no Python with matplotlib (install python3-matplotlib)")
        sys.exit(SKIP)
    return p


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def github_slug(title, used):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(SCRIPT))))
    from weft_report.weft_report import slug
    return slug(title, used)


def fresh(outdir):
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)


def basic(script, outdir):
    fresh(outdir)
    stale = os.path.join(outdir, "fig_test_api_7.svg")  # an earlier run's plot
    with open(stale, "w") as f:
        f.write("<svg/>")
    results = os.path.join(HERE, "results.json")
    p = run(script, results, outdir, "--figures", os.path.join(HERE, "figures"))
    check(p.returncode == 0, "exit status %d, expected 0" % p.returncode)
    index = os.path.join(outdir, "index.md")
    check(os.path.exists(index), "index.md written")
    if not os.path.exists(index):
        return
    md = read(index)
    for s in ["SYNTHETIC-CPU-MARKER Model 9000", "| mode | quick", "2026-11-24 04:00:00 UTC",
              "Linux 6.1.0 x86_64", "GCC 12.2.0", "0.50 0.40 0.30",
              "not comparable to the papers' machines", "the ratios are",
              "## Contents", "TEXT-MARKER: a *markdown* paragraph",
              "| widget B | workers=2 | 3.00 | s | 7% | 3 | <= 4.00 | goal met |",
              "| widget C | workers=2 | n/a |", "FAILED | WRONG RESULT",
              "| CELL-MARKER ratio | 1.5x | 1.50 |", "| pipe \\| escaped | 3 | n/a |",
              "![CAPTION-MARKER: widgets A and B](fig_test_api_1.svg)",
              "](fig_test_api_2.svg)", "*Not measured: MISSING-MARKER the gadget rows",
              "no rows of `nosuchsection`", "— not measured",
              "](fig_sync_1.svg)", "Table 2: sync elided / produce-sync-consume",
              "## Appendix: every row"]:
        check(s in md, "index.md contains %r" % s)
    check("**error**" not in md and "Traceback" not in md, "no figure module failed")
    # Sections in ORDER: the test modules (5, 6, 7) before fig_sync (70).
    heads = re.findall(r"^## \d+\. (.+)$", md, re.M)
    want = ["Test figure: the Figure API", "Test figure: not measured",
            "Test figure: section not run"]
    check(heads[:3] == want and any(h.startswith("Concurrent Cilk Figures 8") for h in heads),
          "sections in ORDER: %r" % heads)
    # Every contents link points at a heading (GitHub's anchors).
    used, anchors = set(), set()
    for h in re.findall(r"^## (.+)$", md, re.M):
        anchors.add(github_slug(h, used))
    toc = md[md.index("## Contents"):md.index("\n## 1.")]
    links = re.findall(r"\]\(#([^)]+)\)", toc)
    check(len(links) >= 5, "contents has the figures and the appendix: %r" % links)
    for a in links:
        check(a in anchors, "contents link #%s has a heading" % a)
    # The appendix lists every row of the results.
    appendix = md[md.index("## Appendix: every row"):]
    with open(results) as f:
        rows = json.load(f)["rows"]
    for r in rows:
        check("| %s | %s | %s |" % (r["section"], r["name"], r["params"]) in appendix,
              "appendix row %s / %s / %s" % (r["section"], r["name"], r["params"]))
    # The plots.
    for name, text in [("fig_test_api_1.svg", "AXIS-MARKER seconds"),
                       ("fig_test_api_2.svg", None), ("fig_sync_1.svg", "weft ivar / Go (time)"),
                       ("fig_sync_2.svg", "time (s), lower is better")]:
        path = os.path.join(outdir, name)
        check(os.path.exists(path), "%s written" % name)
        if os.path.exists(path):
            svg = read(path)
            check("<svg" in svg and svg.rstrip().endswith("</svg>"), "%s is an SVG" % name)
            if text:
                check(text in svg, "%s contains %r" % (name, text))
    # index.html: the same report for a browser.
    page = os.path.join(outdir, "index.html")
    check(os.path.exists(page), "index.html written")
    if os.path.exists(page):
        h = read(page)
        for s in ['<img alt="CAPTION-MARKER: widgets A and B" src="fig_test_api_1.svg">',
                  "<td>widget B</td>", "<td>pipe | escaped</td>", "<code>nosuchsection</code>",
                  "<strong>Absolute times are not comparable", "SYNTHETIC-CPU-MARKER",
                  '<h2 id="appendix-every-row">']:
            check(s in h, "index.html contains %r" % s)
        ids = set(re.findall(r'<h\d id="([^"]+)"', h))
        for a in re.findall(r'<a href="#([^"]+)"', h):
            check(a in ids, "index.html link #%s has a heading" % a)
    check(not os.path.exists(stale), "the stale fig_test_api_7.svg of an earlier run is removed")
    check(not os.path.exists(os.path.join(outdir, "fig_test_api_3.svg")), "no third test plot")


def raising(script, outdir):
    fresh(outdir)
    p = run(script, os.path.join(HERE, "results.json"), outdir,
            "--figures", os.path.join(HERE, "figures_raising"))
    check(p.returncode == 1, "exit status %d, expected 1" % p.returncode)
    check("failed" in p.stderr, "stderr says a figure module failed")
    index = os.path.join(outdir, "index.md")
    check(os.path.exists(index), "index.md written despite the failing module")
    if not os.path.exists(index):
        return
    md = read(index)
    for s in ["Test figure: a module that raises](#", "— **error**", "BEFORE-RAISE-MARKER",
              "**Error:** the figure module raised", "Traceback (most recent call last)",
              "RuntimeError: RAISE-MARKER deliberate failure", "fig_test_raise.py",
              "](fig_sync_1.svg)", "## Appendix: every row", "not comparable"]:
        check(s in md, "index.md contains %r" % s)
    check(os.path.exists(os.path.join(outdir, "fig_sync_1.svg")),
          "the other modules' plots are written")


def bad_input(script, outdir):
    fresh(outdir)
    broken = os.path.join(outdir, "broken.json")
    with open(broken, "w") as f:
        f.write('{"tool": "weft-bench", "rows": [')
    norows = os.path.join(outdir, "norows.json")
    with open(norows, "w") as f:
        f.write('{"tool": "weft-bench"}')
    out = os.path.join(outdir, "out")
    good = os.path.join(HERE, "results.json")
    for args, msg in [([os.path.join(outdir, "absent.json"), out], "cannot read"),
                      ([broken, out], "is not valid JSON"),
                      ([norows, out], "is not weft-bench --json output"),
                      ([good, out, "--figures", os.path.join(outdir, "nodir")],
                       "no such directory"),
                      ([good], "usage:")]:
        p = run(script, *args)
        check(p.returncode == 2, "%s: exit status %d, expected 2" % (args, p.returncode))
        check(msg in p.stderr, "%s: stderr says %r" % (args, msg))
    check(not os.path.exists(os.path.join(out, "index.md")), "no report written on bad input")


def bench(weft_bench, outdir):
    fresh(outdir)
    out = os.path.join(outdir, "report")
    args = [weft_bench, "--only", "spawn", "--quick", "--reps", "1", "--report", out]
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=300)
    print("$ %s -> exit %d" % (" ".join(args), p.returncode))
    print(p.stdout.rstrip())
    print(p.stderr.rstrip())
    if p.returncode != 0 and "can import matplotlib" in p.stderr:
        print("SKIPPED: no Python with matplotlib (install python3-matplotlib)")
        check(os.path.exists(os.path.join(out, "results.json")),
              "results.json written even without matplotlib")
        sys.exit(1 if failures else SKIP)
    check(p.returncode == 0, "exit status %d, expected 0" % p.returncode)
    check("report written to %s/index.md" % out in p.stdout, "weft-bench names the report")
    results = os.path.join(out, "results.json")
    check(os.path.exists(results), "results.json written")
    if os.path.exists(results):
        with open(results) as f:
            data = json.load(f)
        check(data.get("mode") == "quick" and data.get("reps") == 1, "results.json: quick, reps 1")
        check(any(r["section"] == "spawn" for r in data["rows"]), "results.json has spawn rows")
        check(all(r["section"] == "spawn" for r in data["rows"]), "--only applies to --report")
    index = os.path.join(out, "index.md")
    check(os.path.exists(index), "index.md written")
    if os.path.exists(index):
        md = read(index)
        for s in ["not comparable to the papers' machines", "| mode | quick",
                  "[results.json](results.json)", "## Appendix: every row", "| spawn |"]:
            check(s in md, "index.md contains %r" % s)


if __name__ == "__main__":
    modes = {"basic": basic, "raising": raising, "bad-input": bad_input, "bench": bench}
    if len(sys.argv) != 4 or sys.argv[1] not in modes:
        sys.stderr.write("usage: check_report.py basic|raising|bad-input|bench SCRIPT OUTDIR\n")
        sys.exit(2)
    mode, SCRIPT, outdir = sys.argv[1:]
    modes[mode](SCRIPT, outdir)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)
    print("all checks passed")
