"""weft-report: turns weft-bench's --json results into a markdown report with plots.

    scripts/weft-report RESULTS.json OUTDIR [--figures EXTRA_DIR]...

RESULTS.json is what `weft-bench --json PATH` (or `weft-bench --report DIR`)
writes. OUTDIR receives index.md, one SVG per plot, and index.html (the same
report for a browser). Every figure module
(scripts/weft_report/figures/fig_*.py, then those of each --figures directory;
a module of the same file name in an extra directory replaces the built-in one)
contributes one section of the report, in the order of its ORDER. A module's
render(fig) gets a Figure (below) and writes its section through it. See
docs/report.md for the module API.

Exit status: 0 the report is written; 1 the report is written but a figure
module raised (its section shows the traceback); 2 bad arguments or an
unreadable results file; 3 matplotlib cannot be imported (install
python3-matplotlib).
"""

import argparse
import importlib.util
import json
import math
import os
import re
import sys
import traceback
import unicodedata

EXIT_OK, EXIT_FIGURE_ERROR, EXIT_USAGE, EXIT_NO_MATPLOTLIB = 0, 1, 2, 3

BUILTIN_FIGURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "figures")
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's python3-matplotlib installs for this one
_REEXEC_ENV = "WEFT_REPORT_REEXEC"


# --------------------------------------------------------------------------
# Results


class Row:
    """One row of weft-bench's table, as in its JSON.

    section, name, params, unit, note: str; value: float (NaN when the row was
    not measured; `null` in the JSON); samples: list of float (the timed
    repetitions; value is their median); failed: bool (the measurement raised
    or checked a wrong result); goal: None or {"kind": "at_most"|"at_least",
    "value": float, "met": bool|None}.
    """

    __slots__ = ("section", "name", "params", "value", "unit", "samples", "note", "goal",
                 "failed")

    def __init__(self, d):
        if not isinstance(d, dict):
            raise ValueError("a row is not an object: %r" % (d,))
        try:
            self.section = str(d["section"])
            self.name = str(d["name"])
        except KeyError as e:
            raise ValueError("a row has no %s: %r" % (e, d)) from None
        self.params = str(d.get("params", ""))
        self.value = _num(d.get("value"))
        self.unit = str(d.get("unit", ""))
        self.samples = [_num(s) for s in d.get("samples") or []]
        self.note = str(d.get("note", ""))
        self.goal = d.get("goal") or None
        self.failed = bool(d.get("failed", False))

    @property
    def ok(self):
        """Measured and not failed: value is a number to use."""
        return not self.failed and not math.isnan(self.value)

    @property
    def spread(self):
        """(max - min) / median of the samples, NaN with fewer than 2."""
        s = [x for x in self.samples if not math.isnan(x)]
        if len(s) < 2 or not self.ok or self.value == 0:
            return float("nan")
        return (max(s) - min(s)) / abs(self.value)

    def status(self):
        if self.failed:
            return "FAILED"
        if math.isnan(self.value):
            return "not measured" if self.goal else ""
        if not self.goal:
            return ""
        met = self.goal.get("met")
        return "goal met" if met else ("goal missed" if met is False else "")

    def goal_string(self):
        if not self.goal:
            return ""
        sign = {"at_most": "<=", "at_least": ">="}.get(self.goal.get("kind"), "?")
        return "%s %s" % (sign, fmt(_num(self.goal.get("value"))))

    def __repr__(self):
        return "Row(%r, %r, %r, %s %s)" % (self.section, self.name, self.params,
                                           fmt(self.value), self.unit)


def _num(v):
    if v is None:
        return float("nan")
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def fmt(v, unit=""):
    """A number as the report prints it: 3 significant digits, n/a for NaN."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        s = "{:,}".format(v)
    else:
        a = abs(v)
        if a == 0:
            s = "0"
        elif a >= 1e6 or a < 1e-3:
            s = "%.3g" % v
        elif a >= 100:
            s = "{:,.0f}".format(v)
        else:
            s = "%#.3g" % v  # 3 significant digits, trailing zeros kept: 2.00, 0.200
    return s + (" " + unit if unit else "")


def workers_of(text, default=None):
    """The worker count that a row's params (or note) names: '..., 2 workers' -> 2;
    `default` when it names none."""
    m = re.search(r"(\d+) workers?", text)
    return int(m.group(1)) if m else default


def value_of(row):
    """A row's value when the row exists and was measured (Row.ok), else NaN."""
    return row.value if row is not None and row.ok else float("nan")


def load_results(path):
    """The parsed JSON and its rows; raises ValueError on a file that is not weft-bench's."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise ValueError("cannot read %s: %s" % (path, e.strerror or e)) from None
    except json.JSONDecodeError as e:
        raise ValueError("%s is not valid JSON: %s" % (path, e)) from None
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise ValueError("%s is not weft-bench --json output (no \"rows\" list)" % path)
    if data.get("tool") not in (None, "weft-bench"):
        raise ValueError("%s was written by %r, not weft-bench" % (path, data.get("tool")))
    rows = [Row(d) for d in data["rows"]]
    return data, rows


# --------------------------------------------------------------------------
# Markdown helpers


def md_cell(v):
    s = fmt(v) if not isinstance(v, str) else v
    return s.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def md_table(headers, rows):
    if not headers:
        raise ValueError("table(): no headers")
    out = ["| " + " | ".join(md_cell(h) for h in headers) + " |",
           "|" + "|".join("---" for _ in headers) + "|"]
    for r in rows:
        r = list(r)
        if len(r) != len(headers):
            raise ValueError("table(): a row has %d cells for %d headers: %r"
                             % (len(r), len(headers), r))
        out.append("| " + " | ".join(md_cell(c) for c in r) + " |")
    return "\n".join(out)


def slug(title, used):
    """GitHub's anchor for a heading (lowercase, punctuation dropped, spaces to '-')."""
    s = unicodedata.normalize("NFC", title).strip().lower()
    s = "".join(ch for ch in s if ch.isalnum() or ch in " -_")
    s = s.replace(" ", "-")
    base, n = s, 0
    while s in used:
        n += 1
        s = "%s-%d" % (base, n)
    used.add(s)
    return s


def rows_markdown(rows, with_section=False):
    goals = any(r.goal for r in rows) or any(r.failed for r in rows)
    headers = (["section"] if with_section else []) + ["measurement", "parameters", "median",
                                                       "unit", "spread", "n"]
    if goals:
        headers += ["goal", "status"]
    headers.append("note")
    body = []
    for r in rows:
        cells = ([r.section] if with_section else []) + [
            r.name, r.params, fmt(r.value), r.unit if not math.isnan(r.value) else "",
            "" if math.isnan(r.spread) else "%.0f%%" % (100 * r.spread),
            str(len(r.samples)) if r.samples else ""]
        if goals:
            cells += [r.goal_string(), r.status()]
        cells.append(r.note)
        body.append(cells)
    return md_table(headers, body)


# --------------------------------------------------------------------------
# The figure API


class Figure:
    """What a figure module's render(fig) writes its section with.

    rows(section=, name=, params=)  rows whose fields match the regexes (re.search;
                                    None matches everything), in the run's order
    row(section, name, params=None) the first row with exactly these fields, or None
    missing(why)                    the figure could not be drawn: says why
    text(md)                        a markdown paragraph
    rows_table(rows)                rows as a markdown table
    table(headers, rows)            any table (cells: str or numbers, formatted by fmt)
    plot(nrows=1, ncols=1, **kw)    a new matplotlib (Figure, Axes) on the Agg backend
    save(f, caption)                writes OUTDIR/<module>_<k>.svg and embeds it
    Attributes: results (the JSON as a dict), mode ("quick"/"full"), machine (dict),
    module (the module's name), outdir.
    """

    def __init__(self, module, results, rows, outdir):
        self.module = module
        self.results = results
        self.mode = results.get("mode", "")
        self.machine = results.get("machine") or {}
        self.outdir = outdir
        self._rows = rows
        self._parts = []
        self._plots = 0
        self.missing_reason = None
        self.used_rows = set()  # ids of rows the module asked for (the appendix marks the rest)

    # --- data
    def rows(self, section=None, name=None, params=None):
        pats = []
        for field, pat in (("section", section), ("name", name), ("params", params)):
            if pat is not None:
                try:
                    pats.append((field, re.compile(pat)))
                except re.error as e:
                    raise ValueError("rows(%s=%r): bad regex: %s" % (field, pat, e)) from None
        out = [r for r in self._rows if all(p.search(getattr(r, f)) for f, p in pats)]
        self.used_rows.update(id(r) for r in out)
        return out

    def row(self, section, name, params=None):
        for r in self._rows:
            if r.section == section and r.name == name and (params is None or r.params == params):
                self.used_rows.add(id(r))
                return r
        return None

    # --- output
    def missing(self, why):
        self.missing_reason = str(why)
        self._parts.append("*Not measured: %s.*" % str(why).rstrip("."))

    def text(self, md):
        self._parts.append(str(md).strip())

    def rows_table(self, rows):
        rows = list(rows)
        if not rows:
            self._parts.append("*(no rows)*")
            return
        for r in rows:
            if not isinstance(r, Row):
                raise TypeError("rows_table() takes Row objects (from fig.rows()), got %r" % (r,))
        self._parts.append(rows_markdown(rows))

    def table(self, headers, rows):
        self._parts.append(md_table(list(headers), [list(r) for r in rows]))

    def plot(self, nrows=1, ncols=1, figsize=None, **subplots_kw):
        from matplotlib.figure import Figure as MplFigure
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        if figsize is None:
            figsize = (7.0 * ncols if ncols > 1 else 7.0, 4.0 * nrows if nrows > 1 else 4.0)
        f = MplFigure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(f)
        ax = f.subplots(nrows, ncols, **subplots_kw)
        return f, ax

    def save(self, f, caption):
        from matplotlib.figure import Figure as MplFigure
        if not isinstance(f, MplFigure):
            raise TypeError("save() takes the matplotlib Figure from fig.plot(), got %r" % (f,))
        self._plots += 1
        name = "%s_%d.svg" % (self.module, self._plots)
        # No date and a fixed hash salt: the same figures give the same file.
        f.savefig(os.path.join(self.outdir, name), format="svg", metadata={"Date": None})
        cap = str(caption).strip()
        alt = re.sub(r"[\[\]*_`|]", "", cap).replace("\n", " ")
        self._parts.append("![%s](%s)\n\n*Figure %d: %s*" % (alt, name, self._plots,
                                                              cap.rstrip("*")))
        return name

    def markdown(self):
        return "\n\n".join(p for p in self._parts if p)

    @property
    def plots(self):
        return self._plots

    @property
    def empty(self):
        return not self._parts


# --------------------------------------------------------------------------
# Figure modules


class Module:
    def __init__(self, name, path):
        self.name, self.path = name, path
        self.mod = None
        self.error = None  # traceback text
        self.order = 1000
        self.title = name
        self.paper = ""
        self.sections = []

    def load(self):
        try:
            spec = importlib.util.spec_from_file_location("weft_report_figures." + self.name,
                                                          self.path)
            mod = importlib.util.module_from_spec(spec)
            # Registered, as an import would: dataclasses and pickling look the module up.
            sys.modules[spec.name] = mod
            spec.loader.exec_module(mod)
            for attr in ("ORDER", "TITLE", "render"):
                if not hasattr(mod, attr):
                    raise AttributeError("%s defines no %s (see docs/report.md)" % (self.path, attr))
            self.order = float(mod.ORDER)
            self.title = str(mod.TITLE)
            self.paper = str(getattr(mod, "PAPER", ""))
            self.sections = [str(s) for s in getattr(mod, "SECTIONS", [])]
            self.mod = mod
        except Exception:
            self.error = traceback.format_exc()


def discover(dirs):
    """The figure modules of dirs (later directories replace same-named modules)."""
    found = {}
    for d in dirs:
        if not os.path.isdir(d):
            raise ValueError("figure directory %s does not exist" % d)
        for fn in sorted(os.listdir(d)):
            if fn.startswith("fig_") and fn.endswith(".py"):
                found[fn[:-3]] = os.path.join(d, fn)
    mods = [Module(n, p) for n, p in found.items()]
    for m in mods:
        m.load()
    mods.sort(key=lambda m: (m.order, m.name))
    return mods


# --------------------------------------------------------------------------
# The report


def _header(results, rows, results_path, outdir):
    m = results.get("machine") or {}
    cpus = m.get("cpus")
    load = m.get("load_average_start", "?")
    load_end = m.get("load_average_end")
    lines = [
        "# weft: the papers' figures, measured",
        "",
        "Generated by `scripts/weft-report` from the results of `weft-bench` %s." % (
            results.get("version", "")),
        "",
        "| | |",
        "|---|---|",
        "| date | %s |" % md_cell(results.get("date", "?")),
        "| mode | %s (%s timed repetitions per figure after %s warm-up; the median is "
        "reported) |" % (md_cell(results.get("mode", "?")), results.get("reps", "?"),
                         results.get("warmup", "?")),
        "| machine | %s CPUs (online), %s |" % (cpus if cpus is not None else "?",
                                               md_cell(m.get("cpu_model", "?"))),
        "| kernel | %s |" % md_cell(m.get("kernel", "?")),
        "| compiler | %s; build type %s |" % (md_cell(m.get("compiler", "?")),
                                              md_cell(m.get("build_type", "?"))),
        "| baselines | %s; %s |" % (md_cell(m.get("onetbb", "?")), md_cell(m.get("openmp", "?"))),
        "| load average | %s at the start%s |" % (
            md_cell(load), ", %s at the end" % md_cell(load_end) if load_end else ""),
        "| rows | %d (%d failed) |" % (len(rows), sum(r.failed for r in rows)),
        "",
        "**Absolute times are not comparable to the papers' machines** (other CPUs, core "
        "counts, compilers and years); the ratios are: each compares weft with a baseline "
        "measured in the same run, on the same machine, under the same load. Where a paper's "
        "number is an absolute time, read its ratio to the paper's own baseline against "
        "weft's ratio.",
    ]
    try:
        l1 = float(str(load).split()[0])
        if cpus and l1 > 0.5 * float(cpus):
            lines += ["", "**Warning:** the machine was busy when the run started (1-minute "
                      "load %.2f on %s CPUs): expect noisy figures, especially at 2 workers."
                      % (l1, cpus)]
    except (ValueError, IndexError):
        pass
    if results.get("mode") == "quick":
        lines += ["", "This is a `--quick` run: smaller problem sizes and fewer repetitions "
                  "than the full run (`weft-bench --report DIR` without `--quick`)."]
    rel = os.path.relpath(os.path.abspath(results_path), os.path.abspath(outdir))
    if rel.startswith(".."):  # not beside the report: name it, a link would break
        lines += ["", "Every row with its samples: `%s`." % os.path.abspath(results_path)]
    else:
        lines += ["", "Every row with its samples: [%s](%s)." % (rel, rel.replace(os.sep, "/"))]
    return "\n".join(lines)


def _section_rows(rows, sections):
    names = {s.split(".", 1)[0] for s in sections}
    return [r for r in rows if r.section in names]


def render_report(results, rows, results_path, outdir, figure_dirs):
    """Writes outdir/index.md; returns (markdown, number of failed figure modules)."""
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "weft-report"
    matplotlib.rcParams["svg.fonttype"] = "none"  # text as text: small, searchable SVGs

    mods = discover(figure_dirs)
    # Stale plots of an earlier run in the same directory would be embedded by nobody
    # but would mislead a reader of the directory: remove this report's file names.
    pat = re.compile(r"^(fig_\w+)_\d+\.svg$")
    names = {m.name for m in mods}
    for fn in os.listdir(outdir):
        mm = pat.match(fn)
        if mm and mm.group(1) in names:
            os.remove(os.path.join(outdir, fn))

    used = set()
    toc, body = [], []
    errors = 0
    used_rows = set()
    for i, m in enumerate(mods, 1):
        heading = "%d. %s" % (i, m.title)
        anchor = slug(heading, used)
        status = ""
        part = ["## " + heading, ""]
        part += ["%s*Module:* `%s`%s." % (
            "*Paper:* %s. " % m.paper if m.paper else "", os.path.basename(m.path),
            "; *sections:* " + ", ".join("`%s`" % s for s in m.sections)
            if m.sections else ""), ""]
        if m.error is not None:
            errors += 1
            status = " — **error**"
            part += ["**Error:** the figure module `%s` could not be loaded:" % m.path, "",
                     "```", m.error.rstrip(), "```"]
        elif m.sections and not _section_rows(rows, m.sections):
            status = " — not measured"
            part += ["*Not measured: this run has no rows of %s (run `weft-bench --only %s`).*"
                     % (", ".join("`%s`" % s for s in m.sections), ",".join(m.sections))]
        else:
            fig = Figure(m.name, results, rows, outdir)
            try:
                m.mod.render(fig)
                failed = None
            except Exception:
                failed = traceback.format_exc()
            used_rows |= fig.used_rows
            if fig.markdown():
                part.append(fig.markdown())
            if failed is not None:
                errors += 1
                status = " — **error**"
                part += ["", "**Error:** the figure module raised; the section above is what "
                         "it wrote before that:", "", "```", failed.rstrip(), "```"]
            elif fig.missing_reason is not None:
                status = " — not measured"
            elif fig.empty:
                errors += 1
                status = " — **error**"
                part.append("**Error:** the figure module wrote nothing.")
        toc.append("%d. [%s](#%s)%s" % (i, m.title, anchor, status))
        body.append("\n".join(part))

    # The appendix: every row, grouped by section in the run's order.
    app_heading = "Appendix: every row"
    app_anchor = slug(app_heading, used)
    toc.append("- [%s](#%s)" % (app_heading, app_anchor))
    app = ["## " + app_heading, "",
           "The full table of this run (the median of the timed repetitions; spread = "
           "(max - min) / median; n = repetitions). Sections: " +
           (", ".join("`%s`" % s for s in dict.fromkeys(r.section for r in rows)) or "none") +
           "."]
    looked_at = {r.section for r in rows if id(r) in used_rows}
    unused = sorted({r.section for r in rows} - looked_at)
    if unused:
        app += ["", "Sections no figure module reads (their rows are only here): %s." % ", ".join(
            "`%s`" % s for s in unused)]
    if rows:
        app += ["", rows_markdown(rows, with_section=True)]
    else:
        app += ["", "*This run has no rows.*"]

    md = "\n\n".join([_header(results, rows, results_path, outdir),
                      "## Contents\n\n" + "\n".join(toc)] + body + ["\n".join(app)]) + "\n"
    with open(os.path.join(outdir, "index.md"), "w", encoding="utf-8") as f:
        f.write(md)
    # The same report for a browser (the plots are SVG files beside it).
    with open(os.path.join(outdir, "index.html"), "w", encoding="utf-8") as f:
        f.write(markdown_to_html(md, "weft: the papers' figures, measured"))
    return md, errors


_INLINE = [
    (re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)"), r'<img alt="\1" src="\2">'),
    (re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)"), r'<a href="\2">\1</a>'),
    (re.compile(r"\*\*(.+?)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"<em>\1</em>"),
]


def _inline(text):
    """Markdown inline markup of what the report writes: code, images, links, bold, italics."""
    import html
    out = []
    for k, part in enumerate(re.split(r"(`[^`]*`)", text)):
        if k % 2:
            out.append("<code>%s</code>" % html.escape(part[1:-1], quote=False))
            continue
        part = html.escape(part, quote=False).replace("\\|", "|")
        for pat, rep in _INLINE:
            part = pat.sub(rep, part)
        out.append(part)
    return "".join(out)


def markdown_to_html(md, title):
    """index.html from index.md: the subset of markdown the report writes (headings,
    paragraphs, tables, lists, code blocks, images, links, emphasis)."""
    import html
    body, para, lines = [], [], md.split("\n")

    def flush():
        if para:
            body.append("<p>%s</p>" % _inline(" ".join(para)))
            del para[:]

    def heading_id(text, used):
        return slug(text, used)

    used = set()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            flush()
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            body.append("<pre><code>%s</code></pre>" % html.escape("\n".join(lines[i + 1:j])))
            i = j + 1
            continue
        m = re.match(r"^(#{1,6}) (.*)$", line)
        if m:
            flush()
            n = len(m.group(1))
            body.append('<h%d id="%s">%s</h%d>' % (n, heading_id(m.group(2), used),
                                                    _inline(m.group(2)), n))
        elif line.startswith("|"):
            flush()
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            rows = [re.split(r"(?<!\\)\|", r.strip())[1:-1] for r in lines[i:j]]
            t = ["<table>"]
            for k, r in enumerate(rows):
                if k == 1 and all(re.match(r"^\s*:?-+:?\s*$", c) for c in r):
                    continue
                tag = "th" if k == 0 else "td"
                t.append("<tr>%s</tr>" % "".join("<%s>%s</%s>" % (tag, _inline(c.strip()), tag)
                                                  for c in r))
            t.append("</table>")
            body.append("\n".join(t))
            i = j
            continue
        elif re.match(r"^(\d+\.|-) ", line):
            flush()
            j = i
            items = []
            while j < len(lines) and re.match(r"^(\d+\.|-) ", lines[j]):
                items.append(re.sub(r"^(\d+\.|-) ", "", lines[j]))
                j += 1
            body.append("<ul>%s</ul>" % "".join("<li>%s</li>" % _inline(x) for x in items))
            i = j
            continue
        elif not line.strip():
            flush()
        else:
            para.append(line)
        i += 1
    flush()
    style = ("body{font-family:sans-serif;max-width:72em;margin:2em auto;padding:0 1em;"
             "line-height:1.4}table{border-collapse:collapse;margin:1em 0;font-size:90%}"
             "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
             "img{max-width:100%}pre{background:#f4f4f4;padding:.5em;overflow:auto}"
             "code{background:#f4f4f4}")
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%s</title>"
            "<style>%s</style></head><body>\n%s\n</body></html>\n"
            % (html.escape(title), style, "\n".join(body)))


def _have_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    p = argparse.ArgumentParser(
        prog="weft-report",
        description="Writes OUTDIR/index.md (one section per paper figure, with SVG plots) "
                    "from weft-bench's --json results. Needs matplotlib "
                    "(Debian: python3-matplotlib).",
        epilog="Exit status: 0 written; 1 written, but a figure module raised (its section "
               "shows the traceback); 2 bad arguments or results file; 3 no matplotlib. "
               "See docs/report.md.")
    p.add_argument("results", metavar="RESULTS.json", help="weft-bench --json output")
    p.add_argument("outdir", metavar="OUTDIR", help="where index.md and the SVGs go "
                   "(created if missing)")
    p.add_argument("--figures", metavar="DIR", action="append", default=[],
                   help="another directory of fig_*.py modules (repeatable; a module "
                        "replaces a built-in one of the same file name)")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return EXIT_USAGE if e.code not in (0, None) else EXIT_OK

    try:
        results, rows = load_results(args.results)
    except ValueError as e:
        sys.stderr.write("weft-report: %s\n" % e)
        return EXIT_USAGE
    for d in args.figures:
        if not os.path.isdir(d):
            sys.stderr.write("weft-report: --figures %s: no such directory\n" % d)
            return EXIT_USAGE

    if not _have_matplotlib():
        # A pyenv/venv python3 on PATH often lacks Debian's matplotlib: try the system one.
        here = os.path.realpath(sys.executable or "")
        script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else None
        if (not os.environ.get(_REEXEC_ENV) and script
                and os.path.basename(script) == "weft-report" and os.path.exists(SYSTEM_PYTHON)
                and os.path.realpath(SYSTEM_PYTHON) != here):
            os.environ[_REEXEC_ENV] = "1"
            sys.stdout.flush()
            os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, script] + argv)
        sys.stderr.write("weft-report: %s cannot import matplotlib: install it "
                         "(Debian/Ubuntu: apt-get install python3-matplotlib; "
                         "scripts/setup-deps.sh does)\n" % (sys.executable,))
        return EXIT_NO_MATPLOTLIB

    try:
        os.makedirs(args.outdir, exist_ok=True)
    except OSError as e:
        sys.stderr.write("weft-report: cannot create %s: %s\n" % (args.outdir, e.strerror))
        return EXIT_USAGE
    dirs = [BUILTIN_FIGURES] + args.figures
    try:
        _, errors = render_report(results, rows, args.results, args.outdir, dirs)
    except ValueError as e:
        sys.stderr.write("weft-report: %s\n" % e)
        return EXIT_USAGE
    out = os.path.join(args.outdir, "index.md")
    if errors:
        sys.stderr.write("weft-report: %d figure module(s) failed (see their sections in %s)\n"
                         % (errors, out))
        print("weft-report: report written to %s, with errors" % out)
        return EXIT_FIGURE_ERROR
    print("weft-report: report written to %s" % out)
    return EXIT_OK
